"""Test ids as the grader compares them: a log's ids and a dataset's FAIL_TO_PASS / PASS_TO_PASS ids both lose
the timing suffixes that differ from run to run."""

from __future__ import annotations

import re

_BRACKETED = re.compile(r"\s*\d+(?:\.\d+)?\s*(?:ms|s)\s*", re.I)
_IN_SECONDS = re.compile(r"in\s+\d+(?:\.\d+)?\s+(?:msec|sec)\b", re.I)


def _strip_bracketed(name: str, opening: str, closing: str) -> str:
    """`name` without a trailing `[1.3 ms]` (or `(5ms)`) and the space before it."""
    stripped = name.rstrip()
    if stripped.endswith(closing):
        at = stripped.rfind(opening)
        if at >= 0 and _BRACKETED.fullmatch(stripped, at + 1, len(stripped) - 1):
            return stripped[:at].rstrip()
    return name


def _strip_in_seconds(name: str) -> str:
    """`name` without each ` in 1.2 sec` (whitespace before `in` required, as SWE-rebench-V2's `\\s+in\\s+`)."""
    kept, last = [], 0
    for m in _IN_SECONDS.finditer(name):
        start = m.start()
        while start > last and name[start - 1].isspace():
            start -= 1
        if start == m.start():
            continue
        kept.append(name[last:start])
        last = m.end()
    return "".join(kept) + name[last:] if kept else name


def normalise_test_id(name: str) -> str:
    """Timing suffixes (`foo [1.3 ms]`, `foo (5ms)`) differ from run to run: SWE-rebench-V2 strips them on
    both sides before comparing, and so do we."""
    name = _strip_bracketed(name, "[", "]")
    name = _strip_in_seconds(name)
    name = _strip_bracketed(name, "(", ")")
    return name.strip()
