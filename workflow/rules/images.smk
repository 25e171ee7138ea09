# Docker images pre-pulled on a node, so that no episode waits for (or, with sandbox_pull: never, drops on) a pull
# of a multi-GB SWE image. Not part of `all`: a node's images are the node's, not the run's. On each docker node,
# before the stages that run there:
#   snakemake --profile local --configfile configs/paper.yaml pull_all_images --forcerun pull_images
# (--forcerun: the report files are shared, the images are not). Each report lists what was present, pulled, failed.


rule pull_images:
    output:
        f"{RUN}/images/{{benchmark}}.json",
    log:
        f"{RUN}/logs/images/{{benchmark}}.log",
    params:
        config=CONFIG_FILE,
    wildcard_constraints:
        benchmark="[A-Za-z0-9][A-Za-z0-9_.-]*",
    conda:
        ENV
    resources:
        mem_mb=4000,
        runtime=720,  # a few hundred images of 1-5 GB each
    shell:
        "terminus swe pull --benchmark {wildcards.benchmark} --config {params.config} --out {output} > {log} 2>&1"


rule pull_all_images:
    input:
        expand(f"{RUN}/images/{{benchmark}}.json", benchmark=image_benchmarks()),
