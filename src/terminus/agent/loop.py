"""The Execution Subagent's turn loop: `run()` repeats `step()` until an exit, each exit an exception.

Contract (the paper's): one command per turn through the terminal tool, an explicit timeout on each call, a
turn limit whose last turn asks for the final answer, and on a timeout the tool is withdrawn (no call taken; the
tools block stays in the prompt, `ANSWER_NOW`), the final answer forced, and a note appended for the main
agent. The trajectory is saved after every turn.
"""

from __future__ import annotations

import logging
import re
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import jinja2
import yaml

from terminus.agent.cost import budget_note
from terminus.agent.parsing import FormatError, parse_final_answer, parse_tool_calls, render_final_answer
from terminus.agent.terminal import TERMINAL_TOOL, TOOL_NAME, Terminal, ToolCallError, observation
from terminus.agent.trajectory import Trajectory, Turn
from terminus.config import ROOT
from terminus.errors import TerminusError, debug_enabled
from terminus.io import write_json_atomic
from terminus.sandbox import Sandbox

log = logging.getLogger(__name__)

DEFAULT_PROMPTS = ROOT / "configs" / "agent" / "execution_subagent.yaml"
PROMPT_KEYS = (
    "system",
    "user",
    "last_turn",
    "timeout_forced",
    "format_error",
    "timeout_note",
    "input_forced",
    "input_note",
)
# What a command that wanted an answer on its (closed) stdin leaves at the end of its output.
_INPUT_PROMPT = re.compile(
    r"(\[y/n\]|\(y/n\)|\(yes/no[^)]*\)|password[^\n]*:|passphrase[^\n]*:|press (?:any key|enter)|"
    r"EOFError: EOF when reading a line|end of file on stdin|Do you want to continue\?)",
    re.I,
)


def waited_for_input(output: str) -> bool:
    """True when a failed command's last lines show it stopped at a prompt (stdin is /dev/null, so it got EOF)."""
    tail = "\n".join(output.rstrip().splitlines()[-3:])
    return bool(_INPUT_PROMPT.search(tail))


ANSWER_NOW = "none"
"""The `tool_choice` of the last and forced turns. The tools block stays in the prompt on every turn, so the model
reads the context it is trained in (SFT data and GRPO rollouts render the tools on every turn, the final answer's
too); only the call is withdrawn: an endpoint gets OpenAI's `tool_choice: "none"` (vLLM honours it and still renders
the tools unless started with --exclude-tools-when-tool-choice-none, which `terminus serve` does not pass); a local
policy renders the same prompt, and the "answer now" message the loop adds does the asking."""


class Policy(Protocol):
    """messages + tools -> assistant message (`content`, optional `tool_calls`, optional `usage`). `tool_choice`
    None is the policy's own; `ANSWER_NOW` asks for a reply without a tool call."""

    name: str

    def respond(self, messages: list[dict], tools: list[dict], tool_choice: str | None = None) -> dict: ...


@dataclass
class AgentConfig:
    max_turns: int
    """Turns (model replies) per episode; the last one is told to answer now (its default: the schema's
    `collect.max_turns`, given by whoever starts the run)."""
    max_format_errors: int = 3
    """Consecutive unusable replies before the episode ends with `format_error`."""
    max_timeout_ms: int = 600_000
    """Cap on the timeout a model may ask for."""
    prompts: Path = DEFAULT_PROMPTS
    max_tokens: int | None = None
    """Model tokens (in + out) per episode: once spent, no further model call; the episode ends with `budget`."""
    max_cost: float | None = None
    """Dollars per episode at `price`: once spent, no further model call; the episode ends with `budget`."""
    price: tuple[float, float] | None = None
    """Dollars per million model tokens in and out (`terminus.agent.cost`), for max_cost."""


class Prompts:
    """Jinja prompts from a YAML file that must hold every one of `keys` (`what` names the file in errors)."""

    def __init__(self, path: Path, keys: tuple[str, ...] = PROMPT_KEYS, what: str = "prompt file") -> None:
        try:
            raw = yaml.safe_load(Path(path).read_text())
        except (OSError, yaml.YAMLError) as err:
            raise ValueError(f"cannot read {what} {path}: {err}") from err
        missing = [k for k in keys if not isinstance(raw, dict) or k not in raw]
        if missing:
            raise ValueError(f"{what} {path} lacks the keys {missing}")
        env = jinja2.Environment(undefined=jinja2.StrictUndefined)
        self.templates = {k: env.from_string(raw[k]) for k in keys}

    def render(self, key: str, **values) -> str:
        return self.templates[key].render(**values).strip()


class Exit(Exception):
    """The episode ends; `termination` is the record's (final_answer, turn_limit, timeout_forced, input_forced,
    format_error, budget)."""

    def __init__(self, termination: str) -> None:
        super().__init__(termination)
        self.termination = termination


def assistant_message(reply: dict) -> dict:
    """A policy's reply as the conversation keeps it: its text, and its tool calls when it made any."""
    message = {"role": "assistant", "content": reply.get("content") or ""}
    if reply.get("tool_calls"):
        message["tool_calls"] = reply["tool_calls"]
    return message


class ExecutionSubagent:
    def __init__(
        self,
        policy: Policy,
        sandbox: Sandbox,
        config: AgentConfig,
        on_command: Callable[[str], None] | None = None,
        on_message: Callable[[dict], None] | None = None,
    ) -> None:
        self.policy = policy
        self.sandbox = sandbox
        self.config = config
        self.prompts = Prompts(self.config.prompts)
        # on_command hears each command just before it runs (`terminus mcp` turns it into a progress notification)
        self.terminal = Terminal(sandbox, self.config.max_timeout_ms, on_command)
        self.on_message = on_message  # hears each message as it joins the conversation (`terminus exec --verbose`)

    def run(
        self,
        query: str,
        description: str = "",
        *,
        task_id: str | None = None,
        parent_id: str | None = None,
        trajectory_id: str | None = None,
        save_to: Path | None = None,
        saved_extra: Callable[[Trajectory], dict] | None = None,
    ) -> Trajectory:
        """One episode. `save_to`: the file the record is written to after every turn and at the end, with the
        fields `saved_extra` gives for the record so far added (`terminus exec --trajectory`: its cost and
        repository; the stages' own records never carry them)."""
        self.traj = Trajectory(
            id=trajectory_id or uuid.uuid4().hex,
            task_id=task_id,
            parent_id=parent_id,
            policy=self.policy.name,
            query=query,
            description=description,
            backend=self.sandbox.name,
        )
        self.save_to, self.saved_extra = save_to, saved_extra
        workspace = self.sandbox.inside_workspace
        self.traj.messages = [
            {"role": "system", "content": self.prompts.render("system", workspace=workspace, **self._limits())},
            {"role": "user", "content": self.prompts.render("user", query=query, description=description)},
        ]
        for message in self.traj.messages if self.on_message is not None else ():
            self.on_message(message)
        self._consecutive_errors = 0
        try:
            while True:
                self.step()
        except Exit as done:
            self.traj.termination = done.termination
        except Exception as err:  # a policy or sandbox failure ends the episode, recorded, never silently
            # Our own errors (endpoint down, sandbox gone) are one line; anything else is a bug: full traceback.
            # (Expected ones go to the record and the caller's summary, not as a second line on stderr.)
            expected = isinstance(err, TerminusError) and not debug_enabled()
            log.log(
                logging.INFO if expected else logging.ERROR,
                "episode %s crashed: %s",
                self.traj.id,
                err,
                exc_info=not expected,
            )
            self.traj.policy_retries += int(getattr(err, "retries", 0) or 0)  # a failed call's retries count too
            self.traj.termination = "crash"
            self.traj.error = f"{type(err).__name__}: {err}"
        finally:  # an interrupt (Ctrl-C, a job's SIGTERM as KeyboardInterrupt) keeps the reply it cut off
            self._save()
        return self.traj

    def _limits(self) -> dict:
        return {"max_turns": self.config.max_turns}

    def step(self) -> None:
        self._check_budget()
        replies = sum(1 for m in self.traj.messages if m["role"] == "assistant")
        # a policy with a token budget (GRPO's rollouts) may ask for the answer early, so it is never cut off
        must_answer = getattr(self.policy, "must_answer", None)
        last = replies + 1 >= self.config.max_turns or bool(must_answer and must_answer(self.traj.messages))
        if last:
            self._add({"role": "user", "content": self.prompts.render("last_turn")})
        reply = self._query(ANSWER_NOW if last else None)
        if self._finish_if_answered(reply):
            raise Exit("final_answer")
        if last:
            raise Exit("turn_limit")
        try:
            calls = parse_tool_calls(reply)
            if not calls:
                raise FormatError("it holds neither a tool call nor a <final_answer>")
            call = calls[0]  # one command per turn; further calls are not run
            if call.name != TOOL_NAME:
                raise FormatError(f"there is no tool {call.name!r}; the only tool is {TOOL_NAME!r}")
            terminal_call, result = self.terminal(call.arguments)
        except (FormatError, ToolCallError) as err:
            self.traj.format_errors += 1
            self._consecutive_errors += 1
            self._add({"role": "user", "content": self.prompts.render("format_error", error=str(err))})
            self._save()
            if self._consecutive_errors >= self.config.max_format_errors:
                raise Exit("format_error") from None
            return
        self._consecutive_errors = 0
        tool_message = {"role": "tool", "name": TOOL_NAME, "content": observation(result)}
        if call.id:
            tool_message["tool_call_id"] = call.id
        self._add(tool_message)
        usage = reply.get("usage") or {}
        self.traj.turns.append(
            Turn(
                command=terminal_call.command,
                timeout_ms=terminal_call.timeout_ms,
                exit_code=result.exit_code,
                duration_s=result.duration_s,
                timed_out=result.timed_out,
                output_chars=len(result.output),
                truncated=result.truncated,
                prompt_tokens=usage.get("prompt_tokens", 0),
                completion_tokens=usage.get("completion_tokens", 0),
            )
        )
        self._save()
        if result.timed_out:
            self._force_final(terminal_call.command, result.duration_s, "timeout")
        if result.exit_code not in (0, None) and waited_for_input(result.output):
            self._force_final(terminal_call.command, result.duration_s, "input")

    def _force_final(self, command: str, seconds: float, why: str) -> None:
        """The tool is withdrawn (the tools block stays, `ANSWER_NOW`): one more reply must be the final answer."""
        values = {"command": command, "seconds": f"{seconds:.0f}"}
        forced, note = ("timeout_forced", "timeout_note") if why == "timeout" else ("input_forced", "input_note")
        self._add({"role": "user", "content": self.prompts.render(forced, **values)})
        reply = self._query(ANSWER_NOW)
        self._finish_if_answered(reply)
        self.traj.notes.append(self.prompts.render(note, **values))
        raise Exit(forced)  # the prompt's key is the termination

    def _check_budget(self) -> None:
        """Before each model call: a run that has spent its tokens or dollars stops here, cleanly, with a note."""

        note = budget_note(self.traj, self.config.max_tokens, self.config.max_cost, self.config.price)
        if note:
            self.traj.notes.append(note)
            raise Exit("budget")

    def _query(self, tool_choice: str | None) -> dict:
        reply = self.policy.respond(list(self.traj.messages), [TERMINAL_TOOL], tool_choice=tool_choice)
        message = assistant_message(reply)
        usage = reply.get("usage") or {}
        self.traj.prompt_tokens += int(usage.get("prompt_tokens", 0) or 0)
        self.traj.completion_tokens += int(usage.get("completion_tokens", 0) or 0)
        self.traj.policy_retries += int(reply.get("retries", 0) or 0)
        self._add(message)
        return reply

    def _finish_if_answered(self, reply: dict) -> bool:
        entries = parse_final_answer(reply.get("content") or "")
        if entries is None:
            return False
        self.traj.final_answer = entries
        return True

    def _add(self, message: dict) -> None:
        self.traj.messages.append(message)
        if self.on_message is not None:
            self.on_message(message)

    def _save(self) -> None:
        if self.save_to is not None:
            extra = self.saved_extra(self.traj) if self.saved_extra is not None else {}
            write_json_atomic(self.save_to, self.traj.to_dict() | extra)


def answer_text(traj: Trajectory) -> str:
    """What the main agent receives: the final answer pairs, then the notes."""

    parts = [render_final_answer(traj.final_answer)] if traj.final_answer else ["(the subagent gave no final answer)"]
    return "\n".join(parts + traj.notes)


def no_answer_reason(traj: Trajectory) -> str | None:
    """Why an episode ended without a final answer, with its count (`no final answer: 3 malformed tool calls`);
    None when it gave one. `terminus exec` and `terminus mcp` put it where the answer would be, so that whoever
    asked can tell a broken model or endpoint from an empty result. (The main agent of the eval episodes still reads
    `answer_text`, which its records and prompts were made with.)"""
    if traj.final_answer or traj.termination is None:  # answered, or still running
        return None
    replies = sum(1 for m in traj.messages if m.get("role") == "assistant")
    why = {
        "format_error": _count(traj.format_errors, "malformed tool call"),
        "turn_limit": f"the turn limit was reached ({_count(replies, 'model reply', 'model replies')})",
        "timeout_forced": "a command timed out and the reply asked for after it held no answer",
        "input_forced": "a command waited for input and the reply asked for after it held no answer",
        "budget": "the token or cost budget was spent",
        "crash": f"the episode crashed ({traj.error})",
    }.get(traj.termination or "", f"the episode ended with {traj.termination!r}")
    return f"no final answer: {why}"


def _count(n: int, one: str, many: str | None = None) -> str:
    return f"{n} {one if n == 1 else many or one + 's'}"
