rule eval_grid:
    input:
        tasks=f"{RUN}/tasks/valid.jsonl",
        references=f"{RUN}/tasks/valid.validation.trajectories.jsonl",
        models=[*base_model_input(), f"{RUN}/models/sft-merged", f"{RUN}/export"],
        judge=JUDGE_FILES,
    output:
        records=f"{RUN}/eval/records.jsonl",
        summary=f"{RUN}/eval/summary.csv",
    log:
        f"{RUN}/logs/eval_grid.log",
    benchmark:
        f"{RUN}/benchmarks/eval_grid.tsv"
    params:
        config=CONFIG_FILE,
        out=output_parent("summary"),
        no_llm=no_llm("eval"),
    conda:
        ENV
    resources:
        gpu=1,
        mem_mb=64000,
        runtime=720,
    shell:
        "terminus eval --config {params.config} --tasks {input.tasks} --references {input.references} "
        "--out {params.out} {params.no_llm} --quiet > {log} 2>&1"


rule case_study:
    input:
        f"{RUN}/eval/records.jsonl",
    output:
        f"{RUN}/eval/case_study.json",
    log:
        f"{RUN}/logs/case_study.log",
    params:
        task=f"--task {config['eval']['case_study_task']}" if config["eval"].get("case_study_task") else "",
    conda:
        ENV
    resources:
        mem_mb=2000,
        runtime=5,
    shell:
        "terminus case-study --records {input} --out {output} {params.task} > {log} 2>&1"
