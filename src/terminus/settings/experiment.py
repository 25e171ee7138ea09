"""The experiment config (`Config`) and its sections, one model per part of the file; each key's type, default and
description once. configs/schema/config.schema.json is generated from `Config`."""

from __future__ import annotations

from typing import Annotated, ClassVar, Literal

from pydantic import Field, StrictBool, StrictFloat, StrictInt, StrictStr, WithJsonSchema, model_validator
from pydantic_core import PydanticCustomError

from terminus.settings.base import (
    API_HELP,
    MAX_NEW_TOKENS,
    MAX_NEW_TOKENS_HELP,
    NAME_PATTERN,
    REASONING_HELP,
    RUN_PATTERN,
    SWE_TIMEOUT_S,
    Api,
    Count,
    Endpoint,
    PlainEndpoint,
    PositiveNumber,
    Section,
    Share,
    TurnLimit,
    max_retries,
    request_timeout,
    turn_limit,
)


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
    """Shares of repositories per split (by repository, never by task)."""

    train: Share = 0.6
    val: Share = 0.2
    test: Share = 0.2


class Tasks(Section):
    """The task corpus (terminus tasks build / validate)."""

    synthetic: Synthetic = Field(default_factory=Synthetic)
    registry: Registry = Field(default_factory=Registry)
    manifests: list[StrictStr] = Field([], description="SWE-bench-style manifest files (YAML or JSONL) to include.")
    swe: SweTasks = Field(default_factory=SweTasks)
    paraphrase: PlainEndpoint | None = Field(
        None,
        description="Optional OpenAI-compatible endpoint that rephrases queries ({base_url, model, api_key_env}).",
    )
    splits: Splits = Field(default_factory=Splits)


Split = Literal["train", "val", "test"]


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


Benchmark = Literal["repair", "execution", "swebench-pro", "swe-sharp", "swebench-verified"]
CellName = Annotated[StrictStr, Field(pattern=NAME_PATTERN, description="Cell-name part (no __).")]
OVERRIDE_TIMEOUT = "Overrides eval.request_timeout."
OVERRIDE_RETRIES = "Overrides eval.max_retries."


class EvalSwe(Section):
    """The SWE-bench-family benchmarks' settings."""

    datasets: dict[str, StrictStr] = Field(
        {},
        description="Per benchmark, a local file (JSONL/JSON/CSV/parquet) or hub id in the benchmark's schema, "
        "instead of the dataset its config names (offline runs, a subset).",
    )
    limit: StrictInt | None = Field(None, description="Instances per benchmark (null = all).")
    timeout_s: PositiveNumber = Field(SWE_TIMEOUT_S, description="Grading's test-run timeout.")


class MainAgent(Section):
    """{name, kind: reader} (offline, acts on what it reads), {name, kind: replay} (a fixed plan) or
    {name, kind: llm, model, base_url, api_key_env}."""

    OMIT_UNSET = frozenset({"model", "base_url", "api_key_env", "request_timeout", "max_retries", "price_as"})
    name: CellName
    kind: Literal["reader", "replay", "llm"]
    model: StrictStr | None = None
    temperature: Annotated[StrictInt | StrictFloat, Field(ge=0)] = Field(
        0, description="llm: sampling temperature, as the agent is deployed (reader, replay: deterministic)."
    )
    price_as: StrictStr | None = Field(
        None,
        description="configs/prices.yaml model whose prices its tokens cost (default: model; reader, replay: none).",
    )
    base_url: StrictStr | None = None
    api_key_env: StrictStr | None = None
    api: Api = Field("chat", description=API_HELP)
    reasoning: StrictBool = Field(False, description=REASONING_HELP)
    request_timeout: PositiveNumber | None = Field(None, description=OVERRIDE_TIMEOUT)
    max_retries: Count(0) | None = Field(None, description=OVERRIDE_RETRIES)

    @model_validator(mode="after")
    def _llm_has_model(self) -> MainAgent:
        if self.kind == "llm" and self.model is None:
            raise ValueError("model: required for a main agent of kind llm")
        return self


class Subagent(Section):
    """{name, policy: none | scripted | transformers | vllm | openai, model, base_url, api_key_env}. `none` is the
    No-Subagent baseline every other cell is paired against."""

    OMIT_UNSET = frozenset(
        {
            "model",
            "base_url",
            "api_key_env",
            "max_new_tokens",
            "max_model_len",
            "enable_thinking",
            "gpu_memory_utilization",
            "request_timeout",
            "max_retries",
        }
    )
    MODEL_POLICIES: ClassVar[tuple[str, ...]] = ("transformers", "vllm", "openai")
    name: CellName
    policy: Literal["none", "scripted", "transformers", "vllm", "openai"]
    model: StrictStr | None = None
    base_url: StrictStr | None = None
    api_key_env: StrictStr | None = None
    api: Api = Field("chat", description="openai: the API the provider serves the model through (chat | responses).")
    reasoning: StrictBool = Field(
        False, description="openai: a reasoning model (max_completion_tokens, no temperature)."
    )
    max_new_tokens: StrictInt = Field(MAX_NEW_TOKENS, description=MAX_NEW_TOKENS_HELP)
    max_model_len: StrictInt | None = Field(
        None, description="vllm: the served context length (default: the model's)."
    )
    enable_thinking: StrictBool | None = Field(
        None, description="transformers, vllm: Qwen3's thinking (default false, terminus.agent.template)."
    )
    gpu_memory_utilization: (
        Annotated[StrictInt | StrictFloat, Field(gt=0, le=1), WithJsonSchema({"type": "number", "maximum": 1})] | None
    ) = Field(None, description="vllm: the share of the GPU its server may hold (default: vLLM's 0.9).")
    request_timeout: PositiveNumber | None = Field(None, description=OVERRIDE_TIMEOUT)
    max_retries: Count(0) | None = Field(None, description=OVERRIDE_RETRIES)
    tool_call_limit: TurnLimit = turn_limit("Subagent turns per call (the paper's; VS Code's is 5).")
    temperature: Annotated[StrictInt | StrictFloat, Field(ge=0)] = Field(
        0, description="Sampling temperature (the paper's subagent and VS Code's harness: 0; 0 = greedy)."
    )

    @model_validator(mode="after")
    def _model_policy_has_model(self) -> Subagent:
        if self.policy in self.MODEL_POLICIES and self.model is None:
            raise ValueError(f"model: required for a subagent of policy {self.policy}")
        return self


class ContextModel(Section):
    """The model a `summarize` or `prune` context calls: a local model (transformers, vllm; its time is priced at
    eval.gpu_hour_usd) or an endpoint (openai; its tokens priced by configs/prices.yaml as `price_as`)."""

    OMIT_UNSET = frozenset({"base_url", "api_key_env", "price_as"})
    policy: Literal["transformers", "vllm", "openai"]
    model: StrictStr
    base_url: StrictStr | None = None
    api_key_env: StrictStr | None = None
    max_new_tokens: Count(16) = Field(512, description="Tokens the summary or the pruned output may take.")
    temperature: Annotated[StrictInt | StrictFloat, Field(ge=0)] = Field(0, description="Sampling temperature.")
    price_as: StrictStr | None = Field(None, description="configs/prices.yaml model its tokens cost as (openai).")


CONTEXT_SHORT = {"truncate": "trunc"}  # a context's name holds its kind, or this short form (`trunc10k`)


class Context(Section):
    """How the main agent's context is managed (issue 42's arms; what a practitioner does instead of a subagent):
    full = every observation as the terminal gives it (head and tail at 30,000 characters); truncate = each
    observation cut to its head and tail at `max_bytes`; mask = observations older than the last `keep` replaced by a
    one-line placeholder; extract = no model, each observation longer than `max_bytes` cut to its error, failure and
    warning lines plus head and tail; summarize = when the prompt passes `trigger_tokens`, `model` condenses the
    events between the task and the last `keep` messages (OpenHands' LLM-summarizing condenser); prune = `model`
    keeps the lines of each observation longer than `max_bytes` that matter to the main agent's stated intent
    (Squeez-style)."""

    OMIT_UNSET = frozenset({"model"})
    kind: Literal["full", "truncate", "mask", "summarize", "prune", "extract"]
    max_bytes: Count(64) = Field(10_000, description="truncate, extract, prune: observations above this are cut.")
    keep: Count(1) = Field(10, description="mask: observations kept whole; summarize: last messages kept whole.")
    trigger_tokens: Count(64) = Field(16_000, description="summarize: prompt tokens above which it condenses.")
    max_input_chars: Count(1000) = Field(
        64_000, description="summarize, prune: characters of history or output the model is given (oldest cut first)."
    )
    model: ContextModel | None = Field(None, description="summarize, prune: the model that does it.")

    @model_validator(mode="after")
    def _model_where_needed(self) -> Context:
        needs = self.kind in ("summarize", "prune")
        if needs and self.model is None:
            raise ValueError(f"model: required for a context of kind {self.kind}")
        if not needs and self.model is not None:
            raise ValueError(f"model: a context of kind {self.kind} calls no model")
        return self


CellPart = StrictStr | list[StrictStr]


class Exclude(Section):
    """Cells left out of the product (main x subagent x context x benchmark): a cell matching every key a rule
    names (a name or a list of names) is not run."""

    main: CellPart | None = None
    subagent: CellPart | None = None
    context: CellPart | None = None
    benchmark: CellPart | None = None


class EvalJudge(Section):
    """The evaluation's own judge, apart from GRPO's reward (`judge:`): the execution cells' scorer. Keys left null
    follow `judge:`; endpoint does not (null = the fact checker only). Its model must be none of the subagents under
    test (checked when a cell starts)."""

    endpoint: PlainEndpoint | None = Field(
        None, description="{base_url, model, api_key_env}: a judge of another model family than the training reward's."
    )
    scorer: StrictStr | None = Field(None, description="How judge and fact checker combine (null = judge.scorer).")
    output_chars: Count(200) | None = Field(None, description="null = judge.output_chars.")
    reasoning_tokens: Count(0) | None = Field(None, description="null = judge.reasoning_tokens.")


# Lists whose entries name the eval grid's cells (and so their record and prediction files): a repeat would make
# two cells of one name, one of which is silently lost.
UNIQUE_LISTS = (("main_agents", "name"), ("subagents", "name"), ("benchmarks", None), ("seeds", None))


class Eval(Section):
    """The evaluation grid (terminus eval); cells = main agent x subagent x benchmark x seed."""

    split: Split = Field("test", description="Tasks the grid runs on (held out).")
    benchmarks: list[Benchmark] = Field(
        ["repair", "execution"],
        description="repair = fix an injected fault, verified; execution = the forwarded query, judged; "
        "swebench-pro, swe-sharp, swebench-verified = real-repository instances (configs/benchmarks/<name>.yaml), "
        "graded by the official rule, with predictions in SWE-bench's format under eval/predictions/.",
    )
    swe: EvalSwe = Field(default_factory=EvalSwe)
    main_agents: Annotated[list[MainAgent], Field(min_length=1)] = Field(
        default_factory=lambda: [MainAgent(name="reader", kind="reader")], description="Main agents."
    )
    subagents: Annotated[list[Subagent], Field(min_length=1)] = Field(
        default_factory=lambda: [Subagent(name="none", policy="none"), Subagent(name="scripted", policy="scripted")],
        description="Subagents.",
    )
    seeds: list[StrictInt] = Field([0], description="Seeds (replicates) per cell.")
    concurrency: Count(1) = Field(4, description="Episodes at once.")
    request_timeout: PositiveNumber = request_timeout()
    max_retries: Count(0) = max_retries()
    max_tasks: StrictInt | None = Field(None, description="Cap on tasks per benchmark (null = all).")
    tokenizer: Literal["qwen", "cl100k"] = Field("qwen", description="The main model's tokenizer for token counts.")
    case_study_task: StrictStr | None = Field(None, description="Task of the case study (null = pick).")
    judge: EvalJudge = Field(default_factory=EvalJudge)
    contexts: dict[CellName, Context] = Field(
        default_factory=lambda: {"full": Context(kind="full")},
        description="The main agent's context policies by name (a cell-name part holding its kind: full, trunc10k, "
        "mask10, extract, summarize, prune). Execution cells (no main agent) run under `full` alone.",
    )
    exclude: list[Exclude] = Field(
        [], description="Cells left out of the product ({main, subagent, context, benchmark})."
    )
    gpu_hour_usd: Share = Field(
        2.5, description="Dollars per GPU hour for local models' time (subagents, context models) in cost_usd."
    )

    @model_validator(mode="after")
    def _contexts(self) -> Eval:
        if "full" not in self.contexts or self.contexts["full"].kind != "full":
            raise ValueError("contexts: needs `full: {kind: full}` (execution cells and the reference arm use it)")
        for name, ctx in self.contexts.items():
            if CONTEXT_SHORT.get(ctx.kind, ctx.kind) not in name:
                raise ValueError(
                    f"contexts.{name}: the name must hold its kind ({CONTEXT_SHORT.get(ctx.kind, ctx.kind)})"
                )
        return self

    @model_validator(mode="after")
    def _unique(self) -> Eval:
        for key, field in UNIQUE_LISTS:
            seen = set()
            for entry in getattr(self, key):
                value = getattr(entry, field) if field else entry
                if value in seen:
                    what = f"two entries named {value!r}" if field else f"{value!r} twice"
                    raise PydanticCustomError(
                        "not_unique",
                        "{key} has {what}; each must be unique (it names the eval cells)",
                        {"key": key, "what": what},
                    )
                seen.add(value)
        return self


class Analysis(Section):
    """How the grid's results are judged (`eval/noninferiority.csv`)."""

    noninferiority_margin: Annotated[StrictInt | StrictFloat, Field(ge=0, le=1)] = Field(
        0.025,
        description="Resolve-rate margin (a share: 0.025 = 2.5 points) an arm may lose against a reference arm and "
        "still be non-inferior; fixed before the run.",
    )
    bootstrap: Count(100) = Field(2000, description="Cluster-bootstrap resamples (tasks, with all their runs).")


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
