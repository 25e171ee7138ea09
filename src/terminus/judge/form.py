"""What makes an answer no use to the main agent that reads it, beyond its facts: markup where the answer goes, an
empty summary, and text that states nothing checkable (padding the fact checker alone cannot see)."""

from __future__ import annotations

import re

from terminus.judge.runs import Run, names

# -- answers no one can use ----------------------------------------------------------------------------------------
_MARKUP = re.compile(
    r"</?tool_call>|<function[=>]|</?tool_response>|"
    r"\{\s*\"(?:name|function)\"\s*:\s*[\"{].*?\"(?:arguments|parameters)\"\s*:|\{\s*\"command\"\s*:\s*\"",
    re.S | re.I,
)


def unusable(final_answer: list[dict] | None) -> str | None:
    """Why a main agent could not use the answer, or None: tool-call markup or a raw tool-call object in it (the
    policy wrote its call where the answer goes), a pair whose `Summary:` is empty, or no pair at all."""
    if final_answer is None:
        return None
    if not final_answer:
        return "empty final answer"
    for entry in final_answer:
        if _MARKUP.search(f"{entry.get('command', '')}\n{entry.get('summary', '')}"):
            return "tool-call markup in the final answer"
        if not (entry.get("summary") or "").strip():
            return "empty Summary:"
    return None


def usable_answer(final_answer: list[dict] | None, commands: list[str]) -> bool:
    """An answer a main agent can use: parsed, at least one command ran, every `Command:` it names is one that ran
    (matched by what it runs: `runs.names`), and nothing `unusable` in it. An answer that ran nothing, or reports a
    command it never ran, is not usable however well it reads (issue 45: the rate beside every final-answer rate)."""
    if not final_answer or not commands or unusable(final_answer) is not None:
        return False
    return all(any(names(e.get("command") or "", ran) for ran in commands) for e in final_answer)


# -- text that states nothing checkable ----------------------------------------------------------------------------
_STOP_WORDS = """the and for with was were are is has have had its this that these those from into onto than then there
their not but all any some can may might also just very one would could should which what when where who been being
does did done"""
# The words an answer reports in: never in a log, but no padding either.
_REPORT_WORDS = """passed pass passes passing failed fail fails failing failure failures error errors warning warnings
build built builds succeeded success successful compile compiles compiled compilation exit code status ran run runs
test tests suite suites first found project repository root missing dependency package packages module install fix
cause causes likely line file timed out killed incomplete collection assertion panic panicked expected got want total
skipped none ignored installed dependencies project's script manager layout src importable itself resolution offline
required actual left right fixture plugin provides functions subtest"""
_STOP, _REPORT = frozenset(_STOP_WORDS.split()), frozenset(_REPORT_WORDS.split())


def unsupported_share(entries: list[tuple[str, list, tuple[Run, ...]]]) -> float:
    """The share of the summaries' text in clauses that state no grounded claim and whose words mostly appear neither
    in what the commands printed nor among the words answers report in."""
    total = unsupported = 0
    for summary, claims, runs in entries:
        seen = "\n".join(run.output for run in runs).lower()
        for clause in re.split(r";|\n|(?<=[.!?])\s+(?=[A-Z])", summary):
            total += len(clause)
            words = [w for w in re.findall(r"[a-z][a-z_'-]{2,}", clause.lower()) if w not in _STOP]
            if not words or any(c.grounded and c.text in clause for c in claims):
                continue
            if sum(w in _REPORT or w in seen for w in words) * 2 < len(words):
                unsupported += len(clause)
    return unsupported / total if total else 0.0
