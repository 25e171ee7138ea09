"""Whether a subagent's answer is one a main agent can use, and whether its verdict is right (issue 42's
`usable_answer_rate` and `verdict_accuracy`; issue 45 asks the same of every final-answer rate).

An answer is usable when it was parsed, at least one command ran, every `Command:` it names is one that ran (matched
by what it runs: `terminus.judge.runs.names`), and no tool-call markup or empty summary is in it
(`terminus.judge.form.unusable`). So an answer that ran nothing, or that reports a command it never ran, is not
usable however well it reads."""

from __future__ import annotations

from terminus.judge.form import usable_answer
from terminus.mainagent.parse import passed


def usable_rate(episodes: list[dict]) -> float | None:
    """The share of subagent calls (`{trajectory|final_answer, commands}`) with a usable answer; None without any."""
    if not episodes:
        return None
    ok = 0
    for e in episodes:
        final = e.get("final_answer", (e.get("trajectory") or {}).get("final_answer"))
        ok += usable_answer(final, e.get("commands") or [])
    return ok / len(episodes)


def fallback_rate(episodes: list[dict], direct_commands: list[dict]) -> float | None:
    """The share of subagent answers after which (before the next call) the main agent ran its own terminal: it did
    not trust, or could not use, what came back. None without subagent calls."""
    if not episodes:
        return None
    return sum(any(d["after"] == i for d in direct_commands) for i in range(1, len(episodes) + 1)) / len(episodes)


def verdict_correct(answer: str, facts: dict) -> float | None:
    """1.0 when the answer's verdict on the run (passed or failed: `mainagent.parse.passed`) is the task's truth (its
    `exit_code`), 0.0 when it is wrong or absent; None when the task records no truth."""
    if not isinstance(facts.get("exit_code"), int):
        return None
    return float(passed(answer or "") == (facts["exit_code"] == 0))
