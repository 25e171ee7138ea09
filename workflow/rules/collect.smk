rule collect:
    input:
        f"{RUN}/tasks/valid.jsonl",
    output:
        f"{RUN}/collect/trajectories.jsonl",
    log:
        f"{RUN}/logs/collect.log",
    params:
        policy=config["collect"]["policy"],
        model=f"--model {config['collect']['model']}" if config["collect"].get("model") else "",
        base_url=f"--base-url {config['collect']['base_url']}" if config["collect"].get("base_url") else "",
        key=f"--api-key-env {config['collect']['api_key_env']}" if config["collect"].get("api_key_env") else "",
        splits=",".join(config["collect"]["splits"]),
        max_turns=config["collect"]["max_turns"],
        concurrency=config["collect"]["concurrency"],
        limits=f"--request-timeout {config['collect']['request_timeout']} --max-retries {config['collect']['max_retries']}",
        config=CONFIG_FILE,
    threads: 4
    conda:
        ENV
    resources:
        mem_mb=8000,
        runtime=240,
    shell:
        "terminus collect --tasks {input} --out {output} --policy {params.policy} {params.model} {params.base_url} {params.key} "
        "--splits {params.splits} --max-turns {params.max_turns} {params.limits} --concurrency {params.concurrency} "
        "--config {params.config} --quiet > {log} 2>&1"


rule judge_teacher:
    input:
        trajectories=f"{RUN}/collect/trajectories.jsonl",
        tasks=f"{RUN}/tasks/valid.jsonl",
        references=f"{RUN}/tasks/valid.validation.trajectories.jsonl",
        judge=JUDGE_FILES,
    output:
        f"{RUN}/judge/teacher_verdicts.jsonl",
    log:
        f"{RUN}/logs/judge_teacher.log",
    params:
        config=CONFIG_FILE,
        no_llm=no_llm("teacher"),
    conda:
        ENV
    resources:
        mem_mb=4000,
        runtime=120,
    shell:
        "terminus judge --trajectories {input.trajectories} --tasks {input.tasks} --references {input.references} "
        "--out {output} --config {params.config} {params.no_llm} > {log} 2>&1"


rule sft_data:
    input:
        trajectories=f"{RUN}/collect/trajectories.jsonl",
        tasks=f"{RUN}/tasks/valid.jsonl",
        verdicts=f"{RUN}/judge/teacher_verdicts.jsonl",
    output:
        directory(f"{RUN}/sft-data"),
    log:
        f"{RUN}/logs/sft_data.log",
    conda:
        ENV
    resources:
        mem_mb=4000,
        runtime=30,
    shell:
        "terminus sft-data --trajectories {input.trajectories} --tasks {input.tasks} --verdicts {input.verdicts} "
        "--out {output} > {log} 2>&1"


rule judge_validity:
    input:
        expert=f"{RUN}/tasks/valid.validation.trajectories.jsonl",
        tasks=f"{RUN}/tasks/valid.jsonl",
        judge=JUDGE_FILES,
        model=judge_model_input(),
    output:
        f"{RUN}/judge/validity.json",
    log:
        f"{RUN}/logs/judge_validity.log",
    params:
        config=CONFIG_FILE,
    conda:
        ENV
    resources:
        mem_mb=8000,
        runtime=120,
    shell:
        "terminus judge-validity --trajectories {input.expert} --tasks {input.tasks} --out {output} "
        "--config {params.config} > {log} 2>&1"
