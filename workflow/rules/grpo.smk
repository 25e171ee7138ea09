rule grpo:
    input:
        model=f"{RUN}/models/sft-merged",
        tasks=rules.validate_tasks.output.tasks,
        references=rules.validate_tasks.output.expert,
        recipe=lookup(dpath="model/grpo_recipe", within=config),
        judge=judge_inputs("grpo"),
        judge_check=judge_gate(),
    output:
        model=directory(f"{RUN}/models/grpo/final"),
        metrics=f"{RUN}/models/grpo/metrics.jsonl",
    log:
        f"{RUN}/logs/grpo.log",
    benchmark:
        f"{RUN}/benchmarks/grpo.tsv"
    params:
        config=CONFIG_FILE,
        out=output_parent("model"),
        seed=lookup(dpath="seed", within=config),
    conda:
        ENV
    retries: resubmissions()
    resources:
        **train_gpus("grpo_gpus"),
        cpus_per_gpu=16,
        mem_mb=128000,
        runtime=1440,
    shell:
        train_launch("grpo_gpus")
        + " grpo --recipe {input.recipe} --model-name-or-path {input.model} --tasks-file {input.tasks} "
        "--references {input.references} --experiment-config {params.config} --output-dir {params.out} "
        "--seed {params.seed} > {log} 2>&1"
