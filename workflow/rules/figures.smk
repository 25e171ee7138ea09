# One notebook rule per notebook: each reads the run's tables and writes its figures; the executed copy is
# kept as the rule's notebook log. The same notebooks run headless on results/cached/ in CI (make notebooks).
# (Written out, not generated in a loop: Snakemake resolves a `notebook:` path after the loop has moved on.)


rule figure_corpus:
    input:
        f"{RUN}/tasks/tasks.stats.json",
    output:
        f"{RUN}/figures/corpus.png",
    log:
        notebook=f"{RUN}/notebooks/corpus.ipynb",
    params:
        results=output_parent(0, 2),
    conda:
        ENV
    resources:
        mem_mb=4000,
        runtime=10,
    notebook:
        "../../notebooks/corpus.ipynb"


rule figure_training:
    input:
        f"{RUN}/models/sft/metrics.jsonl",
        f"{RUN}/models/grpo/metrics.jsonl",
        f"{RUN}/training/summary.json",
    output:
        f"{RUN}/figures/training.png",
    log:
        notebook=f"{RUN}/notebooks/training.ipynb",
    params:
        results=output_parent(0, 2),
    conda:
        ENV
    resources:
        mem_mb=4000,
        runtime=10,
    notebook:
        "../../notebooks/training.ipynb"


rule figure_evaluation:
    input:
        f"{RUN}/eval/summary.csv",
        f"{RUN}/judge/validity.json",
    output:
        f"{RUN}/figures/evaluation.png",
    log:
        notebook=f"{RUN}/notebooks/evaluation.ipynb",
    params:
        results=output_parent(0, 2),
    conda:
        ENV
    resources:
        mem_mb=4000,
        runtime=10,
    notebook:
        "../../notebooks/evaluation.ipynb"


rule figure_delegation:
    input:
        f"{RUN}/eval/summary.csv",
    output:
        f"{RUN}/figures/delegation.png",
    log:
        notebook=f"{RUN}/notebooks/delegation.ipynb",
    params:
        results=output_parent(0, 2),
    conda:
        ENV
    resources:
        mem_mb=4000,
        runtime=10,
    notebook:
        "../../notebooks/delegation.ipynb"


rule figure_case_study:
    input:
        f"{RUN}/eval/case_study.json",
    output:
        f"{RUN}/figures/case_study.png",
    log:
        notebook=f"{RUN}/notebooks/case_study.ipynb",
    params:
        results=output_parent(0, 2),
    conda:
        ENV
    resources:
        mem_mb=4000,
        runtime=10,
    notebook:
        "../../notebooks/case_study.ipynb"
