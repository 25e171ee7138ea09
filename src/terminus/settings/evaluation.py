"""The evaluation's sections of the experiment config: the grid (`Eval`: main agents, subagents, the main agent's
context policies, benchmarks, seeds, exclusions, prices of GPU time) and how its results are judged (`Analysis`).
Split from `settings.experiment`, which holds the rest of the file's sections and `Config`."""

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
    SWE_TIMEOUT_S,
    Api,
    Count,
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

Benchmark = Literal["repair", "execution", "swebench-pro", "swe-sharp", "swebench-verified", "terminal-bench-2"]
CellName = Annotated[StrictStr, Field(pattern=NAME_PATTERN, description="Cell-name part (no __).")]
OVERRIDE_TIMEOUT = "Overrides eval.request_timeout."
OVERRIDE_RETRIES = "Overrides eval.max_retries."


class EvalSwe(Section):
    """The settings of the benchmarks with a config in configs/benchmarks/ (SWE-bench family, Terminal-Bench 2.0)."""

    datasets: dict[str, StrictStr] = Field(
        {},
        description="Per benchmark, a local file (JSONL/JSON/CSV/parquet) or hub id in the benchmark's schema, "
        "instead of the dataset its config names (offline runs, a subset); for terminal-bench-2 a folder of Harbor "
        "task folders.",
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
        "graded by the official rule, with predictions in SWE-bench's format under eval/predictions/; "
        "terminal-bench-2 = Terminal-Bench 2.0's Harbor tasks in their images, resolved iff the task's verifier "
        "writes a reward of 1.",
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
