rule eval_cell:
    input:
        tasks=rules.validate_tasks.output.tasks,
        references=rules.validate_tasks.output.expert,
        models=cell_model_input,
        judge=cell_judge_inputs,
    output:
        f"{RUN}/eval/cells/{{cell}}.jsonl",
    log:
        f"{RUN}/logs/eval/{{cell}}.log",
    benchmark:
        f"{RUN}/benchmarks/eval/{{cell}}.tsv"
    params:
        config=CONFIG_FILE,
        out=output_parent(0, 2),
        no_llm=no_llm("eval"),
    conda:
        ENV
    resources:
        gpu=cell_gpus,
        cpus_per_gpu=16,  # GPU cells only (the slurm plugin reads it for GPU jobs): vLLM's server compiles on them
        mem_mb=cell_mem_mb,
        runtime=720,
    shell:
        "terminus eval --config {params.config} --tasks {input.tasks} --references {input.references} "
        "--out {params.out} --cell {wildcards.cell} {params.no_llm} --quiet > {log} 2>&1"


rule eval_summary:
    input:
        expand(f"{RUN}/eval/cells/{{cell}}.jsonl", cell=EVAL_CELLS),
    output:
        records=f"{RUN}/eval/records.jsonl",
        summary=f"{RUN}/eval/summary.csv",
    log:
        f"{RUN}/logs/eval_summary.log",
    params:
        config=CONFIG_FILE,
        out=output_parent("summary"),
    conda:
        ENV
    resources:
        mem_mb=2000,
        runtime=10,
    shell:
        "terminus eval-summary --config {params.config} --out {params.out} > {log} 2>&1"


rule case_study:
    input:
        f"{RUN}/eval/records.jsonl",
    output:
        f"{RUN}/eval/case_study.json",
    log:
        f"{RUN}/logs/case_study.log",
    params:
        task=config_flag("eval", "case_study_task", "--task"),
    conda:
        ENV
    resources:
        mem_mb=2000,
        runtime=5,
    shell:
        "terminus case-study --records {input} --out {output} {params.task} > {log} 2>&1"
