"""The main agent: a coding agent that works on a task with a terminal (raw output into its own context,
truncated as real agents do), file read/edit tools, and optionally `execution_subagent`, which delegates to the
subagent loop with any policy. It counts its own prompt and completion tokens per turn with its model's
tokenizer, its turns, its direct terminal calls and its subagent calls.

Two main agents share this harness:
- `llm`: any OpenAI-compatible chat model decides every step (the paper's setting);
- `replay`: no model; a fixed plan of execution needs per task (run the tests, diagnose the failure, read the
  culprit, apply the fix, verify), issued as raw commands without the subagent and as queries with it, so that
  the token effect of delegation is measured on identical work.
"""

from __future__ import annotations

import json
import logging
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from terminus.agent.loop import AgentConfig, ExecutionSubagent, Prompts, answer_text, assistant_message
from terminus.agent.terminal import TERMINAL_TOOL, observation
from terminus.agent.trajectory import command_brief
from terminus.config import ROOT
from terminus.errors import TerminusError, debug_enabled
from terminus.mainagent.context import ContextPolicy
from terminus.mainagent.submit import tree_diff
from terminus.mainagent.tokens import TokenCounter
from terminus.sandbox import Limits, OutsideWorkspaceError, SandboxError, SandboxSpec, make_sandbox
from terminus.sandbox.copying import copy_repository
from terminus.sandbox.tmproot import run_root
from terminus.timing import normalise_timing

log = logging.getLogger(__name__)

LISTING_LINES = 400  # what the read tool shows of a folder
MAIN_OUTPUT_CHARS = 30_000  # what a coding agent's terminal keeps of one command's output (head and tail)
# What the read tool fetches of a file: enough bytes for the characters it shows (up to 4 bytes a character), so
# a 600 MB file costs the host no more than this.
READ_BYTES = 4 * MAIN_OUTPUT_CHARS
READ_TOOL = {
    "type": "function",
    "function": {
        "name": "read_file",
        "description": "Read a file of the repository.",
        "parameters": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
    },
}
EDIT_TOOL = {
    "type": "function",
    "function": {
        "name": "edit_file",
        "description": "Replace the exact text `old` by `new` in a file (old must occur once).",
        "parameters": {
            "type": "object",
            "properties": {"path": {"type": "string"}, "old": {"type": "string"}, "new": {"type": "string"}},
            "required": ["path", "old", "new"],
        },
    },
}
SUBAGENT_TOOL = {  # the input of VS Code's execution_subagent (microsoft/vscode-copilot-chat): both fields required
    "type": "function",
    "function": {
        "name": "execution_subagent",
        "description": (
            "Delegate terminal work (building, running tests, diagnosing failures) to an execution subagent. "
            "It runs the commands in its own context and returns a short summary per command, not the logs."
        ),
        "parameters": {
            "type": "object",
            "properties": {
                "query": {
                    "type": "string",
                    "description": "What to execute, and what to look for in the output. Can include exact commands "
                    "to run, or a description of an execution task.",
                },
                "description": {"type": "string", "description": "User-visible description shown while invoking."},
            },
            "required": ["query", "description"],
        },
    },
}
MAIN_TURNS = 40  # the main agent's turn budget
CACHE_MIN_TOKENS = 1024  # OpenAI's prompt caching starts at 1,024 tokens
DEFAULT_MAIN_PROMPTS = ROOT / "configs" / "mainagent" / "swe.yaml"
MAIN_PROMPT_KEYS = ("system", "user", "turn_limit")


class MainPrompts(Prompts):
    """The SWE main agent's Jinja prompts (configs/mainagent/swe.yaml)."""

    def __init__(self, path: Path = DEFAULT_MAIN_PROMPTS) -> None:
        super().__init__(path, MAIN_PROMPT_KEYS, "main-agent prompt file")


@dataclass
class MainAgentResult:
    main_agent: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    turns: int = 0
    direct_terminal_calls: int = 0
    subagent_calls: int = 0
    subagent_tokens: int = 0
    subagent_turns: int = 0
    timeouts: int = 0
    cache_read_tokens: int = 0  # prompt tokens a prefix cache serves (`MainAgentLoop.cached`)
    peak_context_tokens: int = 0  # the longest prompt of the episode
    subagent_wall_s: float = 0.0  # time spent in subagent calls (a local subagent's GPU time)
    context: dict = field(default_factory=dict)  # what the context policy did (`ContextStats`)
    subagent_episodes: list[dict] = field(default_factory=list)
    per_turn: list[dict] = field(default_factory=list)
    edits: list[dict] = field(default_factory=list)
    direct_commands: list[dict] = field(default_factory=list)  # {command, after}: after how many subagent calls
    final_message: str = ""
    termination: str = ""  # done (replied without a tool call) | turn_limit | error
    diff: str = ""  # what the agent submits: its changes to the repository, as a unified diff
    error: str | None = None

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def to_dict(self) -> dict:
        return asdict(self) | {"tokens": self.tokens}


class Workbench:
    """The main agent's tools over one sandbox; the subagent gets a fresh sandbox (of `sandbox`) over the current
    files, and `subagent_turns` turns a call (eval's `tool_call_limit`)."""

    def __init__(
        self, box, sandbox: SandboxSpec, subagent_policy, subagent_turns: int, context: ContextPolicy | None = None
    ) -> None:
        self.box = box
        self.sandbox = sandbox
        self.subagent_policy = subagent_policy
        self.subagent_turns = subagent_turns
        self.context = context or ContextPolicy()
        self.intent = ""  # the main agent's words with its last call (what a pruner keeps lines for)

    @property
    def tools(self) -> list[dict]:
        tools = [TERMINAL_TOOL, READ_TOOL, EDIT_TOOL]
        return [*tools, SUBAGENT_TOOL] if self.subagent_policy is not None else tools

    def call(self, name: str, args: dict, result: MainAgentResult, parent_id: str) -> str:
        if name == "run_in_terminal":
            result.direct_terminal_calls += 1
            command = str(args.get("command", ""))
            result.direct_commands.append({"command": command, "after": result.subagent_calls})
            out = self.box.run(command, float(args.get("timeout_ms", 120_000)) / 1000)
            result.timeouts += int(out.timed_out)
            text = truncate(normalise_timing(observation(out)))  # as every model reads output (timing.py)
            return self.context.observe(text, f"{self.intent}\n$ {command}".strip())
        if name == "read_file":
            return self.read(str(args.get("path", "")))
        if name == "edit_file":
            return self.edit(args, result)
        if name == "execution_subagent" and self.subagent_policy is not None:
            missing = [k for k in ("query", "description") if not str(args.get(k) or "").strip()]
            if missing:  # VS Code's schema requires both; a call without them is the model's error to fix
                return f"error: execution_subagent needs {' and '.join(missing)} (both query and description)"
            result.subagent_calls += 1
            query = str(args["query"])
            start = time.perf_counter()
            with self.subagent_box() as sub_box:
                agent = ExecutionSubagent(self.subagent_policy, sub_box, AgentConfig(max_turns=self.subagent_turns))
                traj = agent.run(query, str(args["description"]), parent_id=parent_id)
            answer = answer_text(traj)
            result.subagent_wall_s += time.perf_counter() - start
            result.subagent_turns += len(traj.turns)
            result.subagent_tokens += traj.prompt_tokens + traj.completion_tokens
            result.timeouts += sum(t.timed_out for t in traj.turns)
            result.subagent_episodes.append(
                {
                    "query": query,
                    "description": str(args["description"]),
                    "commands": [t.command for t in traj.turns],
                    "turns": [command_brief(t) for t in traj.turns],  # how each ended, for `terminus view`
                    "answer": answer,
                    "termination": traj.termination,
                    "trajectory": traj.to_dict(),
                }
            )
            return answer
        return f"error: there is no tool {name!r}"

    # The file tools go through the sandbox (`Sandbox.read_file`, `write_file`, `list_files`): they see the files as
    # the terminal does, so the same code serves a host workspace and a repository inside an image.
    def read(self, relative: str) -> str:
        try:
            try:
                return shown_file(*self.box.read_file_ends(relative, READ_BYTES))
            except IsADirectoryError:
                return listing(self.box.list_files(relative))
        except OutsideWorkspaceError:
            return f"error: {relative} is outside the repository"
        except FileNotFoundError:
            return f"error: no file {relative}"
        except (OSError, SandboxError) as err:
            return f"error: cannot read {relative}: {err}"

    def edit(self, args: dict, result: MainAgentResult) -> str:
        relative = str(args.get("path", ""))
        try:
            text = self.box.read_file(relative)
        except UnicodeDecodeError:
            return f"error: {relative} is not UTF-8 text; edit it in the terminal"
        except (OSError, SandboxError):  # outside the repository, missing, a folder
            return f"error: no file {relative}"
        old, new = str(args.get("old", "")), str(args.get("new", ""))
        if text.count(old) != 1:
            return "error: `old` must occur exactly once in the file"
        try:
            self.box.write_file(relative, text.replace(old, new, 1))
        except (OSError, SandboxError) as err:
            return f"error: cannot write {relative}: {err}"
        result.edits.append({"path": relative, "old": old, "new": new})
        return "ok"

    def subagent_box(self):
        """A fresh sandbox over the repository's current files (the main agent's edits included)."""
        return make_sandbox(self.sandbox, Path(self.box.workspace))


def listing(paths: list[str], limit: int = LISTING_LINES) -> str:
    """A folder as the read tool shows it: every file below it (`list_files`: relative paths), hidden and dependency
    folders left out."""
    skip = {"node_modules", "target", "build", "__pycache__", "vendor"}
    paths = [p for p in paths if not any(part.startswith(".") or part in skip for part in p.split("/"))]
    shown = sorted(paths, key=lambda p: (p.count("/"), p))[:limit]  # shallow first: build files survive the cap
    more = f"\n[... {len(paths) - limit} more files]" if len(paths) > limit else ""
    return "\n".join(shown) + more


def shown_file(data: bytes, size: int, limit: int = MAIN_OUTPUT_CHARS) -> str:
    """What the read tool shows of a file of `size` bytes, given `data` from `read_file_ends(path, READ_BYTES)`:
    the whole file, or its first and last `READ_BYTES // 2` bytes, of which the first and last `limit // 2`
    characters are shown, as `truncate` shows a whole text."""
    if size <= READ_BYTES:
        return truncate(data.decode("utf-8", errors="replace"), limit)
    half = limit // 2
    head = data[: READ_BYTES // 2].decode("utf-8", errors="replace")[:half]
    tail = data[READ_BYTES // 2 :].decode("utf-8", errors="replace")[-half:]
    left_out = size - len(head.encode()) - len(tail.encode())
    return f"{head}\n[... about {left_out} bytes of a {size}-byte file truncated ...]\n{tail}"


def truncate(text: str, limit: int = MAIN_OUTPUT_CHARS) -> str:
    if len(text) <= limit:
        return text
    half = limit // 2
    return f"{text[:half]}\n[... {len(text) - limit} characters truncated ...]\n{text[-half:]}"


class MainAgentLoop:
    """Runs a main agent (anything with `next_step(messages, tools) -> assistant message`) and does the bookkeeping."""

    def __init__(
        self, brain, counter: TokenCounter, max_turns: int = MAIN_TURNS, prompts: MainPrompts | None = None
    ) -> None:
        self.brain, self.counter, self.max_turns = brain, counter, max_turns
        self.prompts = prompts or MainPrompts()

    def run(self, bench: Workbench, task_text: str, parent_id: str) -> MainAgentResult:
        result = MainAgentResult(main_agent=self.brain.name)
        values = {
            "workspace": bench.box.inside_workspace,
            "delegate": bench.subagent_policy is not None,
            "max_turns": self.max_turns,
            "problem_statement": task_text,
        }
        messages = [
            {"role": "system", "content": self.prompts.render("system", **values)},
            {"role": "user", "content": self.prompts.render("user", **values)},
        ]
        result.termination = "turn_limit"
        context, sent = bench.context, []
        try:
            for _ in range(self.max_turns):
                messages = context.condense(messages, lambda m: self.counter.messages(m, bench.tools))
                reply = self.brain.next_step(messages, bench.tools)
                counts = [self.counter.message(m) for m in messages]  # each message tokenized once a turn
                prompt = sum(counts) + self.counter.tools(bench.tools)
                completion = self.counter.message(reply)
                usage = reply.get("usage") or {}
                prompt, completion = usage.get("prompt_tokens", prompt), usage.get("completion_tokens", completion)
                cached = usage.get("cached_tokens")
                cached = self.cached(sent, messages, bench.tools, counts) if cached is None else cached
                message = assistant_message(reply)
                sent = [*messages, message]
                result.prompt_tokens += prompt
                result.completion_tokens += completion
                result.cache_read_tokens += min(cached, prompt)
                result.peak_context_tokens = max(result.peak_context_tokens, prompt)
                result.turns += 1
                names = [c.get("function", {}).get("name", "") for c in reply.get("tool_calls") or []]
                result.per_turn.append({"prompt_tokens": prompt, "completion_tokens": completion, "tools": names})
                bench.intent = message.get("content") or ""
                messages.append(message)
                if not reply.get("tool_calls"):
                    result.final_message = message["content"]
                    result.termination = "done"
                    break
                for call in reply["tool_calls"]:
                    fn = call["function"]
                    args = fn["arguments"]
                    try:
                        args = json.loads(args) if isinstance(args, str) else args
                    except (json.JSONDecodeError, TypeError, ValueError):
                        args = {}
                    if not isinstance(args, dict):  # a model may send any JSON value; the tool names what it lacks
                        args = {}
                    output = bench.call(fn["name"], args, result, parent_id)
                    messages.append({"role": "tool", "tool_call_id": call.get("id", ""), "content": output})
        except Exception as err:  # an endpoint failure ends the episode, recorded (the grid keeps going)
            expected = isinstance(err, TerminusError) and not debug_enabled()  # ours: one line; a bug: traceback
            level = logging.WARNING if expected else logging.ERROR
            log.log(level, "main agent failed: %s", err, exc_info=not expected)
            result.error = f"{type(err).__name__}: {err}"
            result.termination = "error"
        if result.termination == "turn_limit":
            result.final_message = self.prompts.render("turn_limit", **values)
        result.context = context.stats.to_dict()
        return result

    def cached(
        self, sent: list[dict], messages: list[dict], tools: list[dict], counts: list[int] | None = None
    ) -> int:
        """Prompt tokens a provider's automatic prefix cache would serve, for a main agent whose endpoint does not
        report them (reader, replay; `usage.cached_tokens` otherwise): the tools and the leading messages this prompt
        shares with the last one (its prompt and reply), from `CACHE_MIN_TOKENS` on, as OpenAI caches. A context
        policy that rewrites old messages (mask, summarize) breaks the prefix there, as it does at a provider.
        `counts`: the messages' token counts, when the caller has them."""
        shared = 0
        for old, new in zip(sent, messages, strict=False):
            if old != new:
                break
            shared += 1
        if shared == 0:
            return 0
        counts = counts if counts is not None else [self.counter.message(m) for m in messages]
        tokens = sum(counts[:shared]) + self.counter.tools(tools)
        return tokens if tokens >= CACHE_MIN_TOKENS else 0


def run_main_agent(
    brain,
    task,
    tasks_file: Path,
    *,
    sandbox: SandboxSpec,
    subagent_policy,
    subagent_turns: int,
    counter: TokenCounter | None = None,
    max_turns: int = MAIN_TURNS,
    episode_id: str = "",
    context: ContextPolicy | None = None,
) -> tuple[MainAgentResult, Path]:
    """Run one main-agent episode on a copy of the task's repository; returns the result and the edited tree."""

    counter = counter or TokenCounter()
    limits = Limits(output_head_bytes=MAIN_OUTPUT_CHARS // 2, output_tail_bytes=MAIN_OUTPUT_CHARS // 2)
    keep = Path(tempfile.mkdtemp(prefix="main-", dir=run_root()))  # under the run's root: kill -9 cleans up too
    start = time.perf_counter()
    with make_sandbox(sandbox, task.workspace_path(tasks_file), limits=limits) as box:
        bench = Workbench(box, sandbox, subagent_policy, subagent_turns, context)
        brain.prepare(task) if hasattr(brain, "prepare") else None
        result = MainAgentLoop(brain, counter, max_turns).run(bench, task_description(task), episode_id)
        # The sandbox wrote this tree: links are copied as links and special files (a FIFO would block the copy)
        # skipped, never followed; no git runs in it (its .git/config is the agent's).
        copy_repository(Path(box.workspace), keep / "repo", mode="all")
    result.diff = tree_diff(task.workspace_path(tasks_file), keep / "repo")
    result.per_turn.append({"wall_s": round(time.perf_counter() - start, 3)})
    return result, keep / "repo"


def task_description(task) -> str:
    """The problem statement: the task's own (SWE-style manifests carry one), else the failing suite's."""
    if task.meta.get("problem_statement"):
        return str(task.meta["problem_statement"])
    root = task.facts.get("project_root", ".")
    where = "" if root in (".", "") else f" (the project lives in {root}/)"
    return f"The test suite of this repository fails{where}. Find the cause and fix the code so that all tests pass."
