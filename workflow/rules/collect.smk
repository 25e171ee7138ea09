rule collect:
    input:
        rules.validate_tasks.output.tasks,
    output:
        f"{RUN}/collect/trajectories.jsonl",
    log:
        f"{RUN}/logs/collect.log",
    params:
        policy=config["collect"]["policy"],
        model=config_flag("collect", "model", "--model"),
        base_url=config_flag("collect", "base_url", "--base-url"),
        key=config_flag("collect", "api_key_env", "--api-key-env"),
        splits=",".join(config["collect"]["splits"]),
        max_turns=config["collect"]["max_turns"],
        concurrency=config["collect"]["concurrency"],
        limits=endpoint_limits("collect"),
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
        tasks=rules.validate_tasks.output.tasks,
        references=rules.validate_tasks.output.expert,
        judge=judge_inputs("teacher"),
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
        tasks=rules.validate_tasks.output.tasks,
        verdicts=f"{RUN}/judge/teacher_verdicts.jsonl",
    output:
        directory(f"{RUN}/sft-data"),
    log:
        f"{RUN}/logs/sft_data.log",
    params:
        augment=config["model"]["augment"],
        decision_copies=config["model"]["decision_copies"],
        seed=config["seed"],
    conda:
        ENV
    resources:
        mem_mb=4000,
        runtime=30,
    shell:
        "terminus sft-data --trajectories {input.trajectories} --tasks {input.tasks} --verdicts {input.verdicts} "
        "--out {output} --augment {params.augment} --decision-copies {params.decision_copies} --seed {params.seed} "
        "> {log} 2>&1"


rule judge_validity:
    input:
        expert=rules.validate_tasks.output.expert,
        tasks=rules.validate_tasks.output.tasks,
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
