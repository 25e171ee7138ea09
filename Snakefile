# terminus: the reproduction, end to end. This file is a table of contents; the stages live in workflow/rules/.
#   snakemake --profile local                               # the smoke scale (configs/config.yaml), this machine
#   snakemake --profile slurm --configfile configs/paper.yaml   # the paper scale, on a slurm cluster
from snakemake.utils import min_version

from terminus.config import fill_defaults

min_version("9.0")


# The smoke config unless --configfile names another: Snakemake would otherwise merge the named file into this one
# key by key, and a mapping in both (eval.contexts) would keep the smoke's entries beside the paper's.
if not workflow.overwrite_configfiles:

    configfile: "configs/config.yaml"


# One validation, the stages' own (terminus.config): the schema's defaults filled in, as every CLI stage reads it.
config.update(fill_defaults(config, "the workflow's config (--configfile and --config merged)"))


include: "workflow/rules/common.smk"
include: "workflow/rules/config.smk"
include: "workflow/rules/tasks.smk"
include: "workflow/rules/collect.smk"
include: "workflow/rules/sft.smk"
include: "workflow/rules/grpo.smk"
include: "workflow/rules/export.smk"
include: "workflow/rules/eval.smk"
include: "workflow/rules/figures.smk"
include: "workflow/rules/images.smk"


rule all:
    input:
        final_targets(),
    default_target: True
