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
    threads: lookup(dpath="eval/concurrency", within=config)  # its episodes at once (GPU cells: cpus_per_gpu)
    conda:
        ENV
    retries: resubmissions()  # its finished episodes are kept (<output>.part, not an output): a rerun resumes
    resources:
        gpu=cell_gpus,
        cpus_per_gpu=16,  # GPU cells only (the slurm plugin reads it for GPU jobs): vLLM's server compiles on them
        mem_mb=cell_mem_mb,
        # Paper scale: a cell is its tasks / eval.concurrency 16 x minutes an episode. Repair and execution (up to
        # ~1.2k test tasks, 1-5 min): 75-375 min. SWE-Sharp-Bench (150 instances, 10-30 min): 94-280 min.
        # SWE-Bench Pro (731 instances, 10-30 min with image start, up to 40 main-agent turns and grading):
        # 731 x 10-30 / 16 = 460-1,370 min (8-23 h), plus ~5 min a job to start a served subagent. A job of 720
        # min and resubmissions() more (3): 2,880 min (48 h), each running only the episodes the last did not.
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
        noninferiority=f"{RUN}/eval/noninferiority.csv",
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
        config=CONFIG_FILE,
    conda:
        ENV
    resources:
        mem_mb=2000,
        runtime=5,
    shell:
        "terminus case-study --records {input} --out {output} --config {params.config} > {log} 2>&1"
