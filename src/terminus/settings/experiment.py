"""The experiment config (`Config`) and its sections, one model per part of the file; each key's type, default and
description once. configs/schema/config.schema.json is generated from `Config`."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, StrictBool, StrictInt, StrictStr

from terminus.settings.base import (
    RUN_PATTERN,
    Count,
    Endpoint,
    PlainEndpoint,
    PositiveNumber,
    Section,
    Share,
    Split,
    TurnLimit,
    max_retries,
    request_timeout,
    turn_limit,
)
from terminus.settings.evaluation import Analysis, Eval


class Synthetic(Section):
    """Generated projects with injected faults."""

    enabled: StrictBool = Field(True, description="Build this source.")
    languages: Annotated[list[Literal["python", "node", "cmake", "rust", "go"]], Field(min_length=1)] = Field(
        ["python", "node", "cmake", "rust", "go"], description="Languages to generate."
    )
    repos_per_language: Count(1) = Field(
        3, description="Repositories per language; each yields one project per supported variant."
    )
    variants: Annotated[list[Literal["pass", "fail", "broken", "missing-dep", "warnings"]], Field(min_length=1)] = (
        Field(
            ["pass", "fail", "broken", "missing-dep", "warnings"],
            description="Fault variants (each language uses those it supports).",
        )
    )
    verbose_lines: Count(0) = Field(
        120, description="Log lines each test prints in verbose repositories (what makes delegation pay)."
    )


class CopyTasks(Section):
    """The copy-the-fact control's family (`terminus.tasks.copyfacts`, issue 45's L1): Python test execution with
    every fact drawn fresh per task and one command for all; configs/copy-control.yaml uses it alone."""

    enabled: StrictBool = Field(False, description="Build this source.")
    repos: Count(1) = Field(100, description="Projects (one test-execution task each).")


class Registry(Section):
    """Real PyPI sdists with one flipped operator; ground truth from junit against a baseline."""

    enabled: StrictBool = Field(True, description="Build this source.")
    packages: StrictStr = Field("configs/tasks/packages.yaml", description="YAML list of {name, version}.")
    max_packages: Count(1) | None = Field(None, description="Use only the first N packages of the list (null = all).")
    mutants_per_package: Count(1) = Field(2, description="Mutants kept per package.")
    max_tries: Count(1) = Field(12, description="Mutation sites tried per package.")
    cache: StrictStr = Field("~/.cache/terminus/registry", description="Download cache for sdists.")


class SweTasks(Section):
    """Real-repository tasks from a SWE-bench-family selection (terminus.swe): the selection config's rows, no
    repository of an evaluation benchmark, validated in their images (F2P fail and P2P pass at base + test patch;
    all pass with the gold patch), then test-execution, error-diagnosis, build and dependency tasks with the
    dataset's per-test facts."""

    enabled: StrictBool = Field(False, description="Build this source.")
    config: StrictStr = Field("swe-rebench-v2", description="A selection in configs/benchmarks/.")
    dataset: StrictStr | None = Field(
        None, description="Rows in the selection's schema (a local file or hub id); null = the config's hub dataset."
    )
    validate_: StrictBool = Field(True, alias="validate", description="Check each instance in its image first.")
    limit: StrictInt | None = Field(None, description="Cap on selected instances (null = all).")
    concurrency: Count(1) = Field(2, description="Instances validated at once.")
    max_environment_drop: Annotated[Share, Field(le=1)] = Field(
        0.05,
        description="Share of the validated instances that may drop for environment reasons (an image absent or "
        "unpullable, a sandbox that does not start, no test result with the gold patch) before the tasks stage "
        "fails, naming the count and the first reasons, rather than build a corpus without them.",
    )


class Splits(Section):
    """Shares of repositories per split (by repository, never by task; or by code domain)."""

    OMIT_UNSET = frozenset({"by"})  # a config that does not name it hashes as before

    train: Share = 0.6
    val: Share = 0.2
    test: Share = 0.2
    by: Literal["repo", "domain"] = Field(
        "repo",
        description="What a split holds whole: a repository, or a code domain (a synthetic project's domain, e.g. "
        "billing, in every language; other sources' tasks by repository), so that held-out tasks are in code the "
        "training never saw.",
    )


class Tasks(Section):
    """The task corpus (terminus tasks build / validate)."""

    OMIT_UNSET = frozenset({"copy_"})  # a config that does not name the copy control's family hashes as before

    synthetic: Synthetic = Field(default_factory=Synthetic)
    registry: Registry = Field(default_factory=Registry)
    copy_: CopyTasks = Field(default_factory=CopyTasks, alias="copy")
    manifests: list[StrictStr] = Field([], description="SWE-bench-style manifest files (YAML or JSONL) to include.")
    swe: SweTasks = Field(default_factory=SweTasks)
    paraphrase: PlainEndpoint | None = Field(
        None,
        description="Optional OpenAI-compatible endpoint that rephrases queries ({base_url, model, api_key_env}).",
    )
    splits: Splits = Field(default_factory=Splits)


class Collect(Section):
    """Teacher rollouts over the train and val tasks (terminus collect)."""

    policy: StrictStr = Field("scripted", description="scripted | openai | vllm | transformers")
    model: StrictStr | None = Field(None, description="Model id or folder for the teacher.")
    base_url: StrictStr | None = Field(None, description="Endpoint for the openai policy.")
    api_key_env: StrictStr | None = Field(None, description="Environment variable holding its API key.")
    concurrency: Count(1) = Field(4, description="Episodes at once.")
    max_turns: TurnLimit = turn_limit()
    request_timeout: PositiveNumber = request_timeout()
    max_retries: Count(0) = max_retries()
    splits: list[Split] = Field(["train", "val"], description="Which splits the teacher runs on.")


class TinyModel(Section):
    """The size of the tiny model (`base: tiny` only); heads have 32 dimensions."""

    hidden_size: StrictInt = Field(128, description="Width of the residual stream.")
    layers: StrictInt = Field(2, description="Transformer layers.")


class Model(Section):
    """The base model and the training recipes (terminus tiny-model, sft, grpo, export)."""

    base: StrictStr = Field(
        "tiny", description="`tiny` builds the tiny Qwen3-architecture model locally; otherwise a hub id or folder."
    )
    sft_recipe: StrictStr = Field("configs/sft/tiny.yaml", description="TRL-parser recipe for SFT.")
    grpo_recipe: StrictStr = Field("configs/grpo/tiny.yaml", description="TRL-parser recipe for GRPO.")
    sft_gpus: Count(1) = Field(1, description="GPUs of one node for SFT; over 1: DDP (configs/accelerate/ddp.yaml).")
    grpo_gpus: Count(1) = Field(1, description="GPUs of one node for GRPO; over 1: DDP, a colocated vLLM a rank.")
    summary_max_new_tokens: StrictInt = Field(160, description="Tokens per turn in the held-out check.")
    summary_policy: Literal["transformers", "vllm"] = Field(
        "transformers",
        description="How the held-out check (`terminus training-summary`) runs each model: `transformers` in its "
        "process, or `vllm` served for its episodes, which vLLM batches (the paper scale: thousands of long "
        "episodes).",
    )
    summary_train_tasks: Count(0) = Field(
        0,
        description="The training summary also runs the SFT model on this many of its own training tasks (a seeded "
        "draw), beside the held-out ones: `sft.train_fact_recall` says whether the pipeline fits what it trained on.",
    )
    augment: StrictInt = Field(
        0,
        description="Renamed copies of each SFT training conversation (`terminus sft-data --augment`): the synthetic "
        "projects' names replaced consistently across query, commands, output and answer.",
    )
    decision_copies: Count(0) = Field(
        0,
        description="Copies of each SFT training conversation (renamed ones included) cut after the command that "
        "follows the repository listing (`terminus sft-data --decision-copies`): more examples of the turn on which "
        "an episode's facts depend (benchmarks/learning_probe.py measures it).",
    )
    tiny: TinyModel = Field(default_factory=TinyModel)


class Judge(Section):
    """The judge (terminus judge, judge-validity) and the Scorer used for GRPO rewards and evaluation."""

    rubric: StrictStr = Field("configs/judge/rubric.yaml", description="Rubric dimensions, scales, weights.")
    scorer: StrictStr = Field("configs/judge/scorer.yaml", description="How judge and fact checker combine.")
    prompts: StrictStr = Field("configs/judge/prompts.yaml", description="Jinja prompts of the judge.")
    endpoint: Endpoint | None = Field(
        None,
        description="A real judge. api_key_env names the environment variable holding the key (checked before "
        "anything runs). null = no external judge.",
    )
    serve: StrictStr | None = Field(
        None,
        description="A local model folder to serve with vLLM as the judge for the run (offline plumbing: the smoke "
        "scale serves the tiny base model, whose verdicts mean nothing). Ignored when endpoint is set.",
    )
    group: StrictBool = Field(False, description="Score the G rollouts of one prompt together (GRPO).")
    llm_stages: list[Literal["validity", "teacher"]] = Field(
        ["validity"],
        description="Stages that call this LLM judge; the others use the fact checker alone (said in each verdict). "
        "GRPO calls it when its recipe sets use_llm_judge; eval has its own judge (eval.judge).",
    )
    concurrency: Count(1) = Field(8, description="Judge calls at once (a group's chunks too).")
    request_timeout: PositiveNumber = request_timeout()
    max_retries: Count(0) = max_retries()
    output_chars: Count(200) = Field(
        800,
        description="Characters of each command's output the judge sees (head and tail halves), beside the output "
        "line each claim rests on (always shown). The paper's verbose logs need at least 8192.",
    )
    reply_tokens: Count(16) = Field(
        160,
        description="Tokens one dimension's reply may take: a reason of at most 160 characters (test ids, paths and "
        "hashes cost a token for every 1-2 characters) and a score; tests/judge/test_judge_evidence.py tokenizes the "
        "worst case.",
    )
    reasoning_tokens: Count(0) = Field(
        0, description="Tokens a reasoning model spends before it replies, added to the reply budget."
    )
    max_tokens: Count(16) | None = Field(
        None,
        description="Longest judge reply. null = derived from the rubric: dimensions x candidates a call (4 in group "
        "mode, else 1) x reply_tokens + reasoning_tokens; a value below that is an error (the reply could not fit).",
    )
    validity_llm_pairs: Count(1) | None = Field(
        None, description="Pairs the LLM judge scores in the validity report (null = all)."
    )


class Config(Section):
    """terminus experiment config. One file per scale: configs/config.yaml (smoke, the default) and
    configs/paper.yaml (the full reproduction). Same keys, different values. Paths are relative to the working
    folder."""

    run: Annotated[StrictStr, Field(pattern=RUN_PATTERN)] = Field(
        description="Run name, a plain folder name (letters, digits, '.', '_', '-'; starting with a letter or digit, "
        "so never '..'); everything the run writes goes under results/<run>/."
    )
    seed: StrictInt = Field(0, description="Seed for everything random (corpus, splits, queries, sampling).")
    sandbox: Literal["local", "bwrap", "docker", "apptainer"] | None = Field(
        None, description="Sandbox backend for every episode; null picks bwrap where installed, else local."
    )
    sandbox_image: StrictStr | None = Field(
        None,
        description="Image for docker/apptainer episodes of tasks that bring none (manifest and real-repository tasks "
        "bring their own). null: docker uses the project's registry-free image (docker/sandbox, "
        "terminus-sandbox:host); apptainer needs one (a .sif file or docker://REF).",
    )
    sandbox_pull: Literal["missing", "always", "never"] = Field(
        "missing",
        description="When docker pulls a task's image: missing (when absent on the node, on first use), always "
        "(once per process even when present), never (an absent image fails its episode; pre-pull with "
        "`terminus swe pull`). --pull overrides it.",
    )
    tasks: Tasks
    collect: Collect = Field(default_factory=Collect)
    model: Model = Field(default_factory=Model)
    judge: Judge = Field(default_factory=Judge)
    eval: Eval = Field(default_factory=Eval)
    analysis: Analysis = Field(default_factory=Analysis)
