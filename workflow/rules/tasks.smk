rule tasks:
    input:
        config=CONFIG_FILE,
        packages=lookup(dpath="tasks/registry/packages", within=config),
    output:
        tasks=f"{RUN}/tasks/tasks.jsonl",
        stats=f"{RUN}/tasks/tasks.stats.json",
    log:
        f"{RUN}/logs/tasks.log",
    threads: lookup(dpath="tasks/swe/concurrency", within=config) if swe_corpus() else 1  # SWE instances at once
    conda:
        ENV
    retries: resubmissions()  # its SWE validation resumes (tasks/swe/*.validation.progress.jsonl.part, not outputs)
    resources:
        mem_mb=16000,
        runtime=tasks_runtime(),
    shell:
        "terminus tasks build --config {input.config} --out {output.tasks} --quiet > {log} 2>&1"


rule validate_tasks:
    input:
        f"{RUN}/tasks/tasks.jsonl",
    output:
        tasks=f"{RUN}/tasks/valid.jsonl",
        report=f"{RUN}/tasks/valid.validation.json",
        expert=f"{RUN}/tasks/valid.validation.trajectories.jsonl",
    log:
        f"{RUN}/logs/validate_tasks.log",
    params:
        config=CONFIG_FILE,
    threads: 16 if swe_corpus() else 4
    conda:
        ENV
    retries: resubmissions()  # its finished episodes are kept (<expert>.part, not an output): a rerun resumes
    resources:
        # 16 sandboxes at once: SWE tasks' test runs in their images (apptainer's count against the job's memory)
        mem_mb=32000 if swe_corpus() else 8000,
        # Paper scale: the scripted expert on ~12k tasks, 0.5-3 min each (SWE tasks in their images), 16 at once:
        # 12,000 x 0.5-3 / 16 = 375-2,250 min (6-38 h). A job of 1,440 min and resubmissions() more (3): 5,760 min
        # (96 h), each resubmission running only the tasks the last did not.
        runtime=1440,
    shell:
        "terminus tasks validate --tasks {input} --out {output.tasks} --report {output.report} --config {params.config} "
        "--concurrency {threads} --quiet > {log} 2>&1"
