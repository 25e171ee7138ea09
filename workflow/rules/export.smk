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
        recipes=[config["model"]["sft_recipe"], config["model"]["grpo_recipe"]],
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
        tokens=config["model"]["summary_max_new_tokens"],
    threads: 2
    conda:
        ENV
    resources:
        gpu=1,
        cpus_per_gpu=16,  # a vLLM server per model (its compilation, its engine) beside `threads` sandboxes
        mem_mb=32000,
        runtime=240,
    shell:
        "terminus training-summary --tasks {input.tasks} --base {params.base} --sft {input.sft} --grpo {input.grpo} "
        "--grpo-metrics {input.metrics} --out {output} --config {params.config} --max-new-tokens {params.tokens} "
        "--concurrency {threads} > {log} 2>&1"
