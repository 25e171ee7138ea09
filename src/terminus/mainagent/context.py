"""The main agent's context policies (`eval.contexts`): what a practitioner does instead of training a subagent.

Two hooks in the main agent's loop (`MainAgentLoop`):
- `observe(text, intent)`: each new tool output, before the main agent reads it (truncate, extract, prune);
- `condense(messages, tools)`: the history, before each model call (mask, summarize). What it returns replaces the
  history: a condensation persists, as in OpenHands, so the next prompt starts from it (and so does its cache).

The main agent's last message is never changed by `condense`: it always reads the output it just asked for.
Policies that call a model (summarize, prune) count that model's tokens and its time (`ContextStats`), which the
cell's cost includes; a model failure falls back to a cut without a model, counted, so one bad reply does not end
the episode.
"""

from __future__ import annotations

import json
import re
import time
from dataclasses import asdict, dataclass

PLACEHOLDER = "[observation omitted to save context: {n} characters]"
SUMMARY_PREFIX = "Summary of the earlier steps (the history was condensed to save context):\n"
EXTRACT_LINE = re.compile(
    r"error|fail|warn|exception|traceback|assert|panic|fatal|undefined|cannot|not found|expected|[\w./-]+:\d+",
    re.IGNORECASE,
)
EXTRACT_ENDS = 15  # lines kept at each end by `extract`
SUMMARY_SYSTEM = (
    "You condense the history of a coding agent that is fixing a repository. Keep what it needs to go on: the task, "
    "the commands run and their results (test names, errors, file:line locations, values), the files read and "
    "edited, and what is left to do. Be brief and exact; do not invent anything."
)
PRUNE_SYSTEM = (
    "You select the lines of a command's output that a coding agent needs. Reply with the line numbers to keep, as "
    "ranges such as 1-3,17,40-52, and nothing else."
)


@dataclass
class ContextStats:
    """What the policy did in one episode, for the record and its cost."""

    condensations: int = 0  # summaries made (summarize) or outputs pruned (prune)
    masked: int = 0  # observations replaced by a placeholder (mask)
    cut: int = 0  # observations cut without a model (truncate, extract, a prune or summary fallback)
    failures: int = 0  # model calls that failed or gave nothing usable (the fallback was used)
    prompt_tokens: int = 0  # the context model's
    completion_tokens: int = 0
    model_s: float = 0.0  # wall time of the context model's calls (priced per GPU hour for a local model)

    def to_dict(self) -> dict:
        return asdict(self)


def head_tail(text: str, max_bytes: int) -> str:
    """The text's head and tail, `max_bytes` bytes in all (UTF-8), with what was left out said in between."""
    data = text.encode("utf-8", errors="replace")
    if len(data) <= max_bytes:
        return text
    half = max_bytes // 2
    head = data[:half].decode("utf-8", errors="ignore")
    tail = data[-half:].decode("utf-8", errors="ignore")
    return f"{head}\n[... {len(data) - 2 * half} bytes truncated ...]\n{tail}"


def extract_lines(text: str, max_bytes: int) -> str:
    """No model: the first and last lines, and between them the lines that look like errors, failures, warnings or
    locations (`EXTRACT_LINE`), each run of others replaced by a count; the result cut to `max_bytes`."""
    if len(text.encode("utf-8", errors="replace")) <= max_bytes:
        return text
    lines = text.splitlines()
    keep = [
        i < EXTRACT_ENDS or i >= len(lines) - EXTRACT_ENDS or bool(EXTRACT_LINE.search(line))
        for i, line in enumerate(lines)
    ]
    return head_tail(elide(lines, keep), max_bytes)


def elide(lines: list[str], keep: list[bool]) -> str:
    """The kept lines, each run of the others replaced by a line saying how many were left out."""
    out, skipped = [], 0
    for line, kept in zip(lines, keep, strict=True):
        if kept:
            if skipped:
                out.append(f"[... {skipped} lines omitted ...]")
                skipped = 0
            out.append(line)
        else:
            skipped += 1
    if skipped:
        out.append(f"[... {skipped} lines omitted ...]")
    return "\n".join(out)


def parse_ranges(reply: str, n_lines: int) -> list[int]:
    """Line numbers (1-based, within 1..n_lines, sorted, unique) from a reply such as `1-3, 17, 40-52`."""
    keep: set[int] = set()
    for a, b in re.findall(r"(\d+)\s*(?:-\s*(\d+))?", reply or ""):
        lo, hi = int(a), int(b or a)
        if hi < lo or hi - lo > n_lines:
            continue
        keep.update(k for k in range(lo, hi + 1) if 1 <= k <= n_lines)
    return sorted(keep)


def render_events(messages: list[dict], max_chars: int) -> str:
    """Messages as plain text for the summarizer, oldest cut first when they pass `max_chars`."""
    parts = []
    for m in messages:
        text = m.get("content") or ""
        calls = [c.get("function", c) for c in m.get("tool_calls") or []]
        calls_text = "; ".join(f"{c.get('name')}({_args(c.get('arguments'))})" for c in calls)
        parts.append(f"[{m.get('role')}] {text}{' -> ' + calls_text if calls_text else ''}".strip())
    events = "\n\n".join(parts)
    if len(events) > max_chars:
        events = "[... earlier events cut ...]\n" + events[-max_chars:]
    return events


def _args(args) -> str:
    return args if isinstance(args, str) else json.dumps(args, sort_keys=True)


class ContextPolicy:
    """One episode's context policy (`eval.contexts[name]`, filled); `model` is the policy a summarize or prune
    context calls (`respond(messages, tools) -> message`), made once for the cell."""

    def __init__(self, spec: dict | None = None, model=None) -> None:
        spec = spec or {"kind": "full"}
        self.kind = spec["kind"]
        self.max_bytes = int(spec.get("max_bytes", 10_000))
        self.keep = int(spec.get("keep", 10))
        self.trigger_tokens = int(spec.get("trigger_tokens", 16_000))
        self.max_input_chars = int(spec.get("max_input_chars", 64_000))
        self.model = model
        if self.kind in ("summarize", "prune") and model is None:
            raise ValueError(f"a {self.kind} context needs its model")
        self.stats = ContextStats()

    # -- each new observation -------------------------------------------------------------------------------
    def observe(self, text: str, intent: str = "") -> str:
        if self.kind == "truncate":
            out = head_tail(text, self.max_bytes)
        elif self.kind == "extract":
            out = extract_lines(text, self.max_bytes)
        elif self.kind == "prune" and len(text.encode("utf-8", errors="replace")) > self.max_bytes:
            out = self._prune(text, intent)
        else:
            return text
        self.stats.cut += int(out != text and self.kind != "prune")
        return out

    def _prune(self, text: str, intent: str) -> str:
        lines = text.splitlines()
        numbered = "\n".join(f"{i}: {line}" for i, line in enumerate(lines, 1))
        user = (
            f"The agent's intent: {intent or '(not stated)'}\n\nThe output, {len(lines)} numbered lines:\n{numbered}"
        )
        reply = self._ask(PRUNE_SYSTEM, head_tail(user, self.max_input_chars))
        keep = parse_ranges(reply, len(lines)) if reply is not None else []
        if not keep:
            self.stats.failures += 1
            self.stats.cut += 1
            return head_tail(text, self.max_bytes)  # the fallback: what truncate would show
        self.stats.condensations += 1
        kept = set(keep)
        return head_tail(elide(lines, [k in kept for k in range(1, len(lines) + 1)]), self.max_bytes)

    # -- the history before each call -----------------------------------------------------------------------
    def condense(self, messages: list[dict], count) -> list[dict]:
        """`count(messages) -> prompt tokens`. The history the main agent sees next (and keeps)."""
        if self.kind == "mask":
            return self._mask(messages)
        if self.kind == "summarize" and count(messages) > self.trigger_tokens:
            return self._summarize(messages)
        return messages

    def _mask(self, messages: list[dict]) -> list[dict]:
        tools = [i for i, m in enumerate(messages) if m.get("role") == "tool"]
        old = set(tools[: max(0, len(tools) - self.keep)])
        out = []
        for i, m in enumerate(messages):
            content = m.get("content") or ""
            if i in old and not content.startswith("[observation omitted"):
                m = m | {"content": PLACEHOLDER.format(n=len(content))}
                self.stats.masked += 1
            out.append(m)
        return out

    def _summarize(self, messages: list[dict]) -> list[dict]:
        head, rest = messages[:2], messages[2:]  # the system prompt and the task stay
        start = max(0, len(rest) - self.keep)
        while start > 0 and rest[start].get("role") == "tool":
            start -= 1  # the tail starts at an assistant message: a tool result never loses its call
        middle, tail = rest[:start], rest[start:]
        if not middle:
            return messages
        events = render_events(middle, self.max_input_chars)
        summary = self._ask(SUMMARY_SYSTEM, f"Condense these steps of the agent's history:\n\n{events}")
        if not summary or not summary.strip():
            self.stats.failures += 1
            self.stats.cut += 1
            summary = f"[{len(middle)} earlier messages omitted; the summarizer gave nothing]"
        else:
            self.stats.condensations += 1
        return [*head, {"role": "user", "content": SUMMARY_PREFIX + summary.strip()}, *tail]

    def _ask(self, system: str, user: str) -> str | None:
        start = time.perf_counter()
        try:
            reply = self.model.respond([{"role": "system", "content": system}, {"role": "user", "content": user}], [])
        except Exception:  # a failed summary or prune falls back; the episode goes on (counted in failures)
            return None
        finally:
            self.stats.model_s += time.perf_counter() - start
        usage = reply.get("usage") or {}
        self.stats.prompt_tokens += int(usage.get("prompt_tokens") or 0)
        self.stats.completion_tokens += int(usage.get("completion_tokens") or 0)
        return reply.get("content") or ""
