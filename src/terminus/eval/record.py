"""The grid's record of one episode (contract in docs/ARCHITECTURE.md, `EvalRecord`): typed once here, as
`Trajectory` is, and written as a dict (`to_dict`) to the cells' JSON-lines files that `eval-summary`, `view`, the
case study and the notebooks read. Execution cells leave the main-agent fields None; repair cells add the main
agent's own commands; SWE-family cells add the official grade and the patch; Harbor cells (Terminal-Bench 2.0) the
verifier's reward."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

from terminus.io import record_fields, required_fields

SCHEMA = "terminus.eval/1"


@dataclass
class EvalRecord:
    key: str
    main_agent: str
    subagent: str
    benchmark: str
    seed: int
    task_id: str
    language: str
    source: str
    context: str = "full"
    """The main agent's context policy (`eval.contexts`); `full` for execution cells."""
    task_type: str = ""
    main_agent_tokens: int | None = None
    main_prompt_tokens: int | None = None
    main_completion_tokens: int | None = None
    main_tokens_uncached: int | None = None
    """Prompt tokens billed at the input price: the prompt less what the provider's prefix cache served."""
    main_tokens_cache_read: int | None = None
    main_tokens_output: int | None = None
    peak_context_tokens: int | None = None
    """The main agent's longest prompt in the episode."""
    total_tokens: int | None = None
    """The main agent's tokens, the subagent's and the context model's, together."""
    token_cost_usd: float | None = None
    """Dollars for tokens (configs/prices.yaml; None where a price is unknown): `terminus.eval.cost`."""
    gpu_s: float | None = None
    """Local models' time (subagent, context model): wall-clock, priced at eval.gpu_hour_usd."""
    gpu_cost_usd: float | None = None
    cost_usd: float | None = None
    """token_cost_usd + gpu_cost_usd."""
    context_tokens: int | None = None
    """The context policy's model tokens (summarize, prune)."""
    context_stats: dict = field(default_factory=dict)
    """What the context policy did: condensations, masked, cut, failures (`ContextStats`)."""
    usable_answer_rate: float | None = None
    """The share of subagent answers that are usable: parsed, a command run, each `Command:` one that ran, no
    tool-call markup (`terminus.eval.usable`)."""
    fallback_rate: float | None = None
    """The share of subagent answers after which the main agent ran its own terminal before the next call."""
    verdict_correct: float | None = None
    """1.0 when the subagent's first answer's verdict (the tests pass or fail) is the task's truth."""
    turn_limit: float | None = None
    """1.0 when the main agent used up its turns."""
    main_agent_turns: int | None = None
    direct_terminal_calls: int | None = None
    subagent_calls: int | None = None
    rerun_rate: float | None = None
    subagent_tokens: int | None = None
    subagent_turns: int | None = None
    timeouts: int | None = None
    history_commands: int | None = None
    """Commands, the main agent's and the subagent's, that read git history past the base commit (`git log --all`,
    `git reflog`, `git show <hash>`, ...: `metrics.history_reads`); the environment holds none to find."""
    subagent_history_commands: int | None = None
    resolved: float | None = None
    """1.0 or 0.0 where the benchmark has an outcome (repair, SWE family); None for execution."""
    error: str | None = None
    subagent_episodes: list[dict] = field(default_factory=list)
    judge_score: float | None = None
    fact_precision: float | None = None
    fact_recall: float | None = None
    hallucinated: int | None = None
    reward: float | None = None
    wall_s: float = 0.0
    config_hash: str = ""
    git_commit: str = ""
    run: str = ""
    schema: str = SCHEMA

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass
class MainAgentRecord(EvalRecord):
    """A main-agent episode's (repair cells): also the commands the main agent ran itself."""

    direct_commands: list[str] = field(default_factory=list)


@dataclass
class SweRecord(MainAgentRecord):
    """An SWE-family instance's: also the official grade's test lists and the patch it was given."""

    fail_to_pass: dict = field(default_factory=dict)
    pass_to_pass: dict = field(default_factory=dict)
    model_patch: str = ""


@dataclass
class HarborRecord(MainAgentRecord):
    """A Harbor task's (Terminal-Bench 2.0): also the reward its verifier wrote (None when it wrote none the rule
    can read; `error` then says why) and the tail of the verifier's output."""

    verifier_reward: float | None = None
    verifier_log: str = ""


# What the readers of eval records (`terminus view`, `terminus case-study`) check on every line
# (`terminus.io.read_jsonl`): the record's own types, and those of the subagent calls and direct commands it holds.
SUBAGENT_CALL = {
    "query": (str, None),
    "description": (str, None),
    "commands": ([str], None),
    "turns": (
        [{"command": str, "exit_code": (int, None), "timed_out": (bool, None), "duration_s": (float, None)}],
        None,
    ),
    "answer": (str, None),
    "termination": (str, None),
}
_LISTS = {"subagent_episodes": [SUBAGENT_CALL], "direct_commands": [{"command": str, "after": (int, None)}]}
FIELDS = record_fields(SweRecord, **_LISTS) | record_fields(HarborRecord, **_LISTS)
REQUIRED = required_fields(EvalRecord)
