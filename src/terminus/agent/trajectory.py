"""The trajectory record (contract in docs/ARCHITECTURE.md). The loop writes it atomically after every turn and on
the way out, interrupts included, when given a file (`ExecutionSubagent.run(save_to=...)`, `terminus exec
--trajectory`); the stages write the records they collect themselves."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

from terminus.io import record_fields, required_fields

SCHEMA = "terminus.trajectory/1"
TERMINATIONS = ("final_answer", "turn_limit", "timeout_forced", "input_forced", "format_error", "budget", "crash")


@dataclass
class Turn:
    command: str
    timeout_ms: int
    exit_code: int | None
    duration_s: float
    timed_out: bool
    output_chars: int
    truncated: bool
    prompt_tokens: int = 0
    completion_tokens: int = 0


@dataclass
class Trajectory:
    id: str
    task_id: str | None
    parent_id: str | None
    policy: str
    query: str
    description: str = ""
    backend: str = ""
    """The sandbox backend the commands ran in (local, bwrap, docker, apptainer)."""
    messages: list[dict] = field(default_factory=list)
    turns: list[Turn] = field(default_factory=list)
    prompt_tokens: int = 0
    completion_tokens: int = 0
    format_errors: int = 0
    policy_retries: int = 0
    termination: str | None = None
    final_answer: list[dict[str, str]] | None = None
    notes: list[str] = field(default_factory=list)
    error: str | None = None
    schema: str = SCHEMA

    def to_dict(self) -> dict:
        return asdict(self)


# What the readers of trajectory files (judge, judge-validity, sft-data, tiny-model, view) check on every line
# (`terminus.io.read_jsonl`): the record's own types, and the messages' fields that they read.
MESSAGE = {
    "role": str,
    "content": (str, None),
    "name": (str, None),
    "tool_call_id": (str, None),
    "tool_calls": ([{"function": {"name": str, "arguments": (str, dict)}}], None),
}
FIELDS = record_fields(Trajectory, messages=[MESSAGE], final_answer=([{"command": str, "summary": str}], None))
REQUIRED = required_fields(Trajectory)


def command_brief(turn: Turn | dict) -> dict:
    """How one command ended, as eval records keep it: command, exit code, timed out (no output, and no duration,
    which would make two runs' tables differ)."""
    t = asdict(turn) if isinstance(turn, Turn) else turn
    return {k: t[k] for k in ("command", "exit_code", "timed_out")}


def command_outputs(traj: Trajectory) -> list[tuple[int | None, str]]:
    """(exit code, output as the model read it) of each command run, in order: the turns paired with the tool
    messages."""
    outputs = [m.get("content") or "" for m in traj.messages if m.get("role") == "tool"]
    return [(turn.exit_code, output) for turn, output in zip(traj.turns, outputs, strict=False)]
