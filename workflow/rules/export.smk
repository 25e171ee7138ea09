rule export_sft:
    input:
        f"{RUN}/models/sft/final",
    output:
        directory(f"{RUN}/models/sft-merged"),
    log:
        f"{RUN}/logs/export_sft.log",
    params:
        base=base_model(),
    conda:
        ENV
    resources:
        gpu=1,
        cpus_per_gpu=8,  # without it the slurm plugin asks --cpus-per-task=<threads> (1): merging and vLLM's start
        mem_mb=32000,
        runtime=60,
    shell:
        "terminus export --model {input} --out {output} --base {params.base} --no-vllm > {log} 2>&1"


rule export:
    input:
        model=f"{RUN}/models/grpo/final",
        counts=f"{RUN}/sft-data",
        recipes=[lookup(dpath=f"model/{key}", within=config) for key in ("sft_recipe", "grpo_recipe")],
    output:
        directory(f"{RUN}/export"),
    log:
        f"{RUN}/logs/export.log",
    benchmark:
        f"{RUN}/benchmarks/export.tsv"
    conda:
        ENV
    resources:
        gpu=1,
        cpus_per_gpu=8,  # without it the slurm plugin asks --cpus-per-task=<threads> (1): merging and vLLM's start
        mem_mb=32000,
        runtime=60,
    shell:
        "terminus export --model {input.model} --out {output} --counts {input.counts}/counts.json "
        "--recipe {input.recipes[0]} --recipe {input.recipes[1]} > {log} 2>&1"


rule training_summary:
    input:
        tasks=rules.validate_tasks.output.tasks,
        base=base_model_input(),
        sft=f"{RUN}/models/sft-merged",
        grpo=f"{RUN}/export",
        metrics=f"{RUN}/models/grpo/metrics.jsonl",
    output:
        f"{RUN}/training/summary.json",
    log:
        f"{RUN}/logs/training_summary.log",
    benchmark:
        f"{RUN}/benchmarks/training_summary.tsv"
    params:
        base=base_model_param,
        config=CONFIG_FILE,
    threads: lookup(dpath="eval/concurrency", within=config)  # its episodes at once (slurm: cpus_per_gpu, a GPU job)
    conda:
        ENV
    retries: resubmissions()  # its episodes are kept (training/held_out_*.jsonl, not outputs): a rerun resumes
    resources:
        gpu=1,
        cpus_per_gpu=16,  # a vLLM server per model (its compilation, its engine) beside the concurrent episodes
        mem_mb=32000,
        # Paper scale, served (model.summary_policy: vllm) at eval.concurrency 16: ~1.2k test tasks a model at 1-5
        # min an episode (8-10 turns of up to 1,024 tokens at ~100 tokens/s, commands 1-40 s) is 1,200 / 16 x 1-5 =
        # 75-375 min, plus ~5 min to start its server: 4-19 h for the three models. Measured at smoke scale (30
        # test tasks, 2 CPU cores): 225 episodes/min served at concurrency 16 after a 34 s start, against 29 a
        # minute through transformers at concurrency 2 (docs/reproduce.md, "What it costs").
        runtime=1440,
    shell:
        "terminus training-summary --tasks {input.tasks} --base {params.base} --sft {input.sft} --grpo {input.grpo} "
        "--grpo-metrics {input.metrics} --out {output} --config {params.config} > {log} 2>&1"
