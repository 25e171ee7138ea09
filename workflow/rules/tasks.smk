rule tasks:
    input:
        config=CONFIG_FILE,
        packages=config["tasks"]["registry"]["packages"],
    output:
        tasks=f"{RUN}/tasks/tasks.jsonl",
        stats=f"{RUN}/tasks/tasks.stats.json",
    log:
        f"{RUN}/logs/tasks.log",
    conda:
        ENV
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
    threads: 4
    conda:
        ENV
    resources:
        mem_mb=8000,
        runtime=120,
    shell:
        "terminus tasks validate --tasks {input} --out {output.tasks} --report {output.report} --config {params.config} "
        "--concurrency {threads} --quiet > {log} 2>&1"
