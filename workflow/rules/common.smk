# Helpers shared by the rules: paths of the run, the config file in use, what the base model is. They read the
# config Snakemake holds, and of its settings only whether this is a dry run, never Snakemake's internals.
import json
import sys
from pathlib import Path

import yaml

from terminus.eval.cells import cell_context_model, cell_names, cell_needs_gpu, cell_subagent
from terminus.io import write_text_atomic

RUN = f"results/{config['run']}"


def dry_run() -> bool:
    """Whether this invocation only plans (`snakemake -n`, `--dry-run`). The command line's output settings carry the
    flag when the workflow is read; `workflow.dryrun` asks the executor, which is chosen only afterwards (False here)."""
    return bool(getattr(getattr(workflow, "output_settings", None), "dryrun", False))


DRY_RUN = dry_run()


def merged_config_text() -> str:
    merged = yaml.safe_dump(json.loads(json.dumps(config)), sort_keys=False)
    return f"# the workflow's config (--configfile and --config merged), as the stages read it\n{merged}"


def merged_configfile() -> str:
    """The config file the CLI stages read: the workflow's config (the --configfile, the --config overrides such as
    `--config seed=1 run=learning-1`, the schema's defaults) written to results/<run>/config.yaml, rewritten only
    when it changes, so that the stages see what the rules see. The CLI validates it the same way. Written when the
    workflow is read, before Snakemake plans, so that a changed config reruns `tasks` (the file's mtime) with any
    --rerun-triggers; as a job's output it went stale (an existing file with no params record). A dry run writes
    nothing (a run folder would appear for a run that never ran, and `make lab` would open it): for a new run, rule
    resolved_config (config.smk) stands in for the file in the plan; for a changed config, a note says what the real
    run will do. Returns the path."""
    path, text = Path(RUN) / "config.yaml", merged_config_text()
    if path.is_file() and path.read_text() == text:
        return str(path)
    if not DRY_RUN:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_text_atomic(path, text)
    elif path.is_file():  # a changed config: the plan cannot show it without the file's new mtime
        print(
            f"note: {path} differs from this config: a real run rewrites it and reruns `tasks`, which reads it, and "
            "the stages after it; this dry run writes nothing and lists neither",
            file=sys.stderr,
        )
    return str(path)


CONFIG_FILE = merged_configfile()
JUDGE_FILES = [config["judge"]["rubric"], config["judge"]["scorer"], config["judge"]["prompts"]]
LABEL_FILES = sorted(str(p) for p in Path("configs/judge/labels").glob("*.jsonl"))  # people's labels (judge-validity)
JUDGE_GATE_PAIRS = 20  # pairs the real judge scores before GRPO (rule judge_validity_llm)


def judge_gate() -> list[str]:
    """The real judge's check that GRPO waits for: when the config rewards through a judge endpoint (the paper's);
    a smoke config has none (its tiny served judge is plumbing, checked by judge_validity)."""
    return [f"{RUN}/judge/validity-llm.json"] if config["judge"].get("endpoint") else []
NOTEBOOKS = ["corpus", "training", "evaluation", "delegation", "case_study"]
# One eval job per grid cell (<main>__<sub>__<context>__<bench>__<seed>), each with its own resources.
EVAL_CELLS = cell_names(config["eval"])


wildcard_constraints:
    cell="|".join(EVAL_CELLS) or "none",


ENV = "../../environment.yml"  # conda: directives (used with --use-conda); the venv of `make` otherwise


def output_parent(key: str | int = 0, up: int = 1):
    """A param that names the folder above an output (recipes take output_dir, not the final file)."""

    def parent(wildcards, output):
        return str(Path(output[key] if isinstance(key, int) else getattr(output, key)).parents[up - 1])

    return parent


def base_model_param(wildcards, input):
    """The base model the recipe loads: the tiny model built by this run, or the hub id / folder configured."""
    return input.base[0] if is_tiny() else config["model"]["base"]


def is_tiny() -> bool:
    return config["model"]["base"] == "tiny"


def base_model() -> str:
    """A folder the tiny-model rule builds, or a hub id / folder the recipe loads as is."""
    return f"{RUN}/models/base" if is_tiny() else config["model"]["base"]


def resubmissions() -> int:
    """How many times a failed job of a long stage is submitted again. At paper scale a job is cut off at its slurm
    time limit, which Snakemake sees as a failure: it deletes the job's declared outputs and submits it again only
    with `retries`. Every long stage keeps its progress beside its outputs, in files that are not outputs, so each
    submission continues where the last one stopped: training its checkpoints and its log (train_log.jsonl), the
    episode stages (tasks' SWE validation, validate_tasks, collect, eval cells, the held-out summary) the
    `<out>.part` file of their finished episodes (terminus.collect.runner), the judges their call cache
    (judge/cache). The rules' runtimes are sized so that 1 + resubmissions() jobs cover each stage's estimate
    (docs/reproduce.md, "What it costs"). The tiny model's runs take minutes on one machine, where a failure is a bug to read,
    not a time limit."""
    return 0 if is_tiny() else 3


def swe_corpus() -> bool:
    """The corpus holds real-repository tasks (configs/paper.yaml): the corpus stages validate them in images."""
    return bool(config["tasks"].get("swe", {}).get("enabled"))


def image_benchmarks() -> list[str]:
    """The benchmarks whose instances run in their own images: the config's SWE eval benchmarks (a config in
    configs/benchmarks/) and its tasks.swe selection when the corpus has real-repository tasks."""
    names = [b for b in config["eval"]["benchmarks"] if Path(f"configs/benchmarks/{b}.yaml").is_file()]
    if swe_corpus():
        names.append(config["tasks"]["swe"]["config"])
    return list(dict.fromkeys(names))


def base_model_input() -> list[str]:
    return [f"{RUN}/models/base"] if is_tiny() else []


def uses_llm_judge(stage: str) -> bool:
    """Whether a stage calls an LLM judge: eval its own (`eval.judge.endpoint`), the others `judge:`'s when the
    stage is in judge.llm_stages."""
    if stage == "eval":
        return bool((config["eval"].get("judge") or {}).get("endpoint"))
    return stage in config["judge"]["llm_stages"]


def no_llm(stage: str) -> str:
    """`--no-llm` for stages the config does not give the LLM judge."""
    return "" if uses_llm_judge(stage) else "--no-llm"


def judge_inputs(stage: str) -> list[str]:
    """The judge files a stage's output depends on: the Scorer's weights always; the rubric and the judge's prompts
    only when the stage calls the LLM judge (`judge.llm_stages`; GRPO when its recipe sets use_llm_judge). So that
    editing the rubric reruns what the rubric can change, and nothing else."""
    if stage == "grpo":
        llm = bool((yaml.safe_load(Path(config["model"]["grpo_recipe"]).read_text()) or {}).get("use_llm_judge"))
    else:
        llm = uses_llm_judge(stage)
    judge = config["judge"]
    scorer = (config["eval"].get("judge") or {}).get("scorer") if stage == "eval" else None
    return [scorer or judge["scorer"], *([judge["rubric"], judge["prompts"]] if llm else [])]


def cell_judge_inputs(wildcards) -> list[str]:
    """Only execution cells are scored (the Scorer, and the LLM judge when eval.judge names one); repair and
    SWE cells never call the judge, so an edit of the rubric or the Scorer leaves them alone."""
    return judge_inputs("eval") if wildcards.cell.split("__")[3] == "execution" else []


def judge_model_input() -> list[str]:
    """The served judge model, when the config serves one from this run."""
    serve = config["judge"].get("serve")
    if serve and not config["judge"].get("endpoint") and serve.replace("{run}", config["run"]).startswith(RUN):
        return [serve.replace("{run}", config["run"])]
    return []


def final_targets() -> list[str]:
    return [
        f"{RUN}/training/summary.json",
        f"{RUN}/judge/validity.json",
        f"{RUN}/eval/summary.csv",
        f"{RUN}/eval/noninferiority.csv",
        f"{RUN}/eval/case_study.json",
        *[f"{RUN}/figures/{name}.png" for name in NOTEBOOKS],
    ]


def cell_model_input(wildcards) -> list[str]:
    """The models a cell loads (its subagent's, its summarizer's or pruner's), when this run builds them: its cell
    waits for those stages, no other."""
    models = [cell_subagent(config["eval"], wildcards.cell).get("model") or ""]
    models.append((cell_context_model(config["eval"], wildcards.cell) or {}).get("model") or "")
    paths = [m.replace("{run}", config["run"]) for m in models]
    return sorted({p for p in paths if p.startswith(f"{RUN}/")})


def cell_gpus(wildcards) -> int:
    """Cells whose subagent is a local model get a GPU; endpoint-only and scripted cells run on CPU nodes."""
    return int(cell_needs_gpu(config["eval"], wildcards.cell))


def cell_mem_mb(wildcards) -> int:
    return 64000 if cell_needs_gpu(config["eval"], wildcards.cell) else 8000


def tasks_runtime() -> int:
    """Minutes for the corpus stage: a few without real repositories. With the SWE selection, ~10k SWE-rebench-V2
    instances are validated in their images (image start, F2P, P2P and gold runs: 3-15 min an instance) at
    tasks.swe.concurrency 32: 10,000 x 3-15 / 32 = 940-4,700 min (16-78 h). A job of 2,880 min (48 h) and
    resubmissions() more (3) give 4 x 2,880 = 11,520 min (192 h); each resubmission validates only the instances
    the last did not (tasks/swe/tasks.validation.progress.jsonl.part) after rebuilding the synthetic and registry
    tasks (under an hour)."""
    return 2880 if swe_corpus() else 60



DDP_CONFIG = "configs/accelerate/ddp.yaml"


def train_launch(gpus_key: str) -> str:
    """How a training stage starts: `terminus` itself on one GPU (the command as it always was), or the same CLI
    under `accelerate launch` as DDP, one process a GPU of the job (`model.sft_gpus`, `model.grpo_gpus`)."""
    gpus = config["model"][gpus_key]
    if gpus == 1:
        return "terminus"
    return f"accelerate launch --num_processes {gpus} --config_file {DDP_CONFIG} -m terminus.cli"


def train_gpus(gpus_key: str) -> dict:
    """A training job's GPU resources. Several GPUs: one node (DDP's ranks talk over the node's links) and
    tasks_per_gpu 0, so that the slurm plugin asks no --ntasks-per-gpu: slurm starts one task, and `accelerate
    launch` in it starts a process per GPU (with one task per GPU slurm would run the whole command once per GPU)."""
    gpus = config["model"][gpus_key]
    return {"gpu": gpus} if gpus == 1 else {"gpu": gpus, "nodes": 1, "tasks_per_gpu": 0}
