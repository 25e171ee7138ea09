rule tiny_model:
    input:
        f"{RUN}/collect/trajectories.jsonl",
    output:
        directory(f"{RUN}/models/base"),
    log:
        f"{RUN}/logs/tiny_model.log",
    params:
        config=CONFIG_FILE,  # its seed and model.tiny (the model's shape)
    conda:
        ENV
    resources:
        mem_mb=4000,
        runtime=10,
    shell:
        "terminus tiny-model --out {output} --corpus {input} --config {params.config} > {log} 2>&1"


rule sft:
    input:
        data=f"{RUN}/sft-data",
        recipe=lookup(dpath="model/sft_recipe", within=config),
        base=base_model_input(),
    output:
        model=directory(f"{RUN}/models/sft/final"),
        metrics=f"{RUN}/models/sft/metrics.jsonl",
    log:
        f"{RUN}/logs/sft.log",
    benchmark:
        f"{RUN}/benchmarks/sft.tsv"
    params:
        base=base_model_param,
        out=output_parent("model"),
        seed=lookup(dpath="seed", within=config),
    conda:
        ENV
    retries: resubmissions()
    resources:
        **train_gpus("sft_gpus"),
        cpus_per_gpu=8,
        mem_mb=64000,
        runtime=720,
    shell:
        train_launch("sft_gpus")
        + " sft --recipe {input.recipe} --model-name-or-path {params.base} --dataset-path {input.data} "
        "--output-dir {params.out} --seed {params.seed} > {log} 2>&1"
