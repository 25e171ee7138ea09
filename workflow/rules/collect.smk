rule collect:
    input:
        rules.validate_tasks.output.tasks,
    output:
        f"{RUN}/collect/trajectories.jsonl",
    log:
        f"{RUN}/logs/collect.log",
    params:
        config=CONFIG_FILE,  # the teacher, its endpoint and limits, splits, turns, concurrency: its `collect` section
    threads: lookup(dpath="collect/concurrency", within=config)  # its episodes at once
    conda:
        ENV
    retries: resubmissions()  # its finished episodes are kept (<output>.part, not an output): a rerun resumes
    resources:
        mem_mb=8000,
        # Paper scale: the teacher on ~10.8k train and validation tasks at collect.concurrency 32, 1-5 min an
        # episode (endpoint turns and commands): 10,800 x 1-5 / 32 = 340-1,690 min (6-28 h). A job of 1,440 min
        # and resubmissions() more (3): 5,760 min (96 h), each running only the episodes the last did not.
        runtime=1440,
    shell:
        "terminus collect --tasks {input} --out {output} --config {params.config} --quiet > {log} 2>&1"


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
    retries: resubmissions()  # each judge call is cached as it returns (judge/cache, not an output): a rerun asks
    resources:  # only the calls the last job did not finish
        mem_mb=4000,
        # Paper scale: ~10.8k trajectories at judge.concurrency 32, 10-30 s a judge call: 10,800 x 10-30 / 32 / 60 =
        # 56-170 min. One job of 240 min holds it; resubmissions() more (3) absorb an endpoint's slow hours.
        runtime=240,
    shell:
        "terminus judge --trajectories {input.trajectories} --tasks {input.tasks} --references {input.references} "
        "--out {output} --config {params.config} {params.no_llm} > {log} 2>&1"


rule sft_data:
    input:
        trajectories=f"{RUN}/collect/trajectories.jsonl",
        tasks=rules.validate_tasks.output.tasks,
        verdicts=f"{RUN}/judge/teacher_verdicts.jsonl",
        # the SFT recipe's max_length and its model's tokenizer: conversations are cut to fit what training keeps
        recipe=lookup(dpath="model/sft_recipe", within=config),
        base=base_model_input(),
    output:
        directory(f"{RUN}/sft-data"),
    log:
        f"{RUN}/logs/sft_data.log",
    params:
        augment=lookup(dpath="model/augment", within=config),
        decision_copies=lookup(dpath="model/decision_copies", within=config),
        seed=lookup(dpath="seed", within=config),
        base=base_model_param,
    conda:
        ENV
    resources:
        mem_mb=4000,
        runtime=30,
    shell:
        "terminus sft-data --trajectories {input.trajectories} --tasks {input.tasks} --verdicts {input.verdicts} "
        "--out {output} --augment {params.augment} --decision-copies {params.decision_copies} --seed {params.seed} "
        "--recipe {input.recipe} --model {params.base} > {log} 2>&1"


rule judge_validity:
    input:
        expert=rules.validate_tasks.output.expert,
        tasks=rules.validate_tasks.output.tasks,
        judge=JUDGE_FILES,
        labels=LABEL_FILES,
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


rule judge_validity_llm:
    """Before any GRPO step that a judge endpoint rewards (the paper's): the real judge on 20 pairs, so that a judge
    that cannot answer, or answers unreadably, stops the run here and not 50 steps into training."""
    input:
        expert=rules.validate_tasks.output.expert,
        tasks=rules.validate_tasks.output.tasks,
        judge=JUDGE_FILES,
        labels=LABEL_FILES,
    output:
        f"{RUN}/judge/validity-llm.json",
    log:
        f"{RUN}/logs/judge_validity_llm.log",
    params:
        config=CONFIG_FILE,
        pairs=JUDGE_GATE_PAIRS,
    conda:
        ENV
    retries: resubmissions()  # each judge call is cached as it returns (judge/cache): a rerun asks only the rest
    resources:
        mem_mb=4000,
        runtime=60,  # 40 judge calls at judge.concurrency, 10-60 s each
    shell:
        "terminus judge-validity --llm --llm-pairs {params.pairs} --trajectories {input.expert} --tasks {input.tasks} "
        "--out {output} --config {params.config} > {log} 2>&1"
