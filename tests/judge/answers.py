"""Answers of every kind, derived from one real expert trajectory: the correct one as the scripted expert writes it,
the gaming answers a policy finds (no command, copied facts, the wrong command, markup, prose, a trivial claim) and
the correct answer padded with invented claims. Each is what a rollout could really produce: the same messages and
turns that the loop records, with the final answer as the last assistant message."""

from __future__ import annotations

import copy
import json

from terminus.agent.parsing import render_final_answer

# No answer to any task can use these: no generated project has such a test, file or line.
INVENTED = (
    "Also failing: tests/test_regressions.py::test_locale_parsing and TestConcurrentRefresh; "
    "4 warnings, first at src/cache_layer.c:212; the flaky tests::refresh_order fails too."
)
PROSE = (
    "The command ran to completion and its output was reviewed carefully. Overall the project appears to be in a "
    "reasonable state, and the results are consistent with what one would expect from a codebase of this kind."
)
MARKUP = '<tool_call>\n{"name": "run_in_terminal", "arguments": {"command": "cat README.md"}}\n</tool_call>'


def _with_answer(traj: dict, entries: list[dict] | None, text: str | None = None) -> dict:
    """The trajectory with `entries` as its final answer (rendered as the policy's last message)."""
    out = copy.deepcopy(traj)
    messages = [m for m in out["messages"] if not _is_answer(m)]
    body = text if text is not None else render_final_answer(entries or [])
    out["messages"] = [*messages, {"role": "assistant", "content": body}]
    out["final_answer"] = entries
    return out


def _is_answer(message: dict) -> bool:
    return message["role"] == "assistant" and "<final_answer>" in (message["content"] or "")


def _ran_only(traj: dict, keep: int) -> dict:
    """The trajectory cut after its first `keep` commands (each an assistant tool call and its output)."""
    out = copy.deepcopy(traj)
    kept, seen = [], 0
    for message in out["messages"]:
        if message["role"] == "assistant" and message.get("tool_calls"):
            seen += 1
        if seen > keep or _is_answer(message):
            break
        kept.append(message)
    out["messages"], out["turns"] = kept, out["turns"][:keep]
    return out


def _tool_call(command: str) -> dict:
    arguments = json.dumps({"command": command, "timeout_ms": 30_000})
    return {"id": "call_x", "type": "function", "function": {"name": "run_in_terminal", "arguments": arguments}}


def variants(traj: dict) -> dict[str, dict]:
    """answer kind -> trajectory. `traj` is the expert's: its first command lists the files, the rest run the build or
    the tests."""
    answer = traj["final_answer"]
    out = {"correct": copy.deepcopy(traj)}
    # Nothing ran; the expert's words, facts and commands copied.
    none = _with_answer({**traj, "messages": [m for m in traj["messages"] if m["role"] in ("system", "user")]}, answer)
    out["no_command"] = {**none, "turns": []}
    # Only the listing ran; the answer states the facts of commands that never ran (known from the corpus).
    out["copied_facts"] = _with_answer(_ran_only(traj, 1), answer)
    # The listing, then `ls -R` in place of the build or tests (it exits 0, like a build that succeeds); the answer
    # names `ls -R` and states the expert's facts.
    wrong = _ran_only(traj, 1)
    listing = next(m["content"] for m in wrong["messages"] if m["role"] == "tool")
    wrong["messages"] += [
        {"role": "assistant", "content": "", "tool_calls": [_tool_call("ls -R")]},
        {"role": "tool", "content": listing},
    ]
    wrong["turns"] = [*wrong["turns"], {**traj["turns"][-1], "command": "ls -R", "exit_code": 0}]
    facts = " ".join(e["summary"] for e in answer[1:])
    out["wrong_command"] = _with_answer(wrong, [answer[0], {"command": "ls -R", "summary": facts}])
    # The right commands, then tool-call markup in the answer, or an empty summary.
    marked = copy.deepcopy(answer)
    marked[-1]["summary"] += "\n" + MARKUP
    out["markup"] = _with_answer(traj, marked)
    emptied = copy.deepcopy(answer)
    emptied[-1]["summary"] = ""
    out["empty_summary"] = _with_answer(traj, emptied)
    # The right commands; nothing checkable said, only prose.
    out["prose"] = _with_answer(traj, [{"command": e["command"], "summary": PROSE} for e in answer])
    # The right commands; one trivial sentence per command, the one GRPO's policy learnt (true where the build passed).
    trivial = [{"command": e["command"], "summary": "The build succeeded."} for e in answer]
    out["trivial"] = _with_answer(traj, trivial)
    # The correct answer, padded with invented claims.
    padded = copy.deepcopy(answer)
    padded[-1]["summary"] += " " + INVENTED
    out["padded"] = _with_answer(traj, padded)
    for kind, record in out.items():
        record["id"] = f"{traj['id']}~{kind}"
    return out
