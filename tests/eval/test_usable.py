"""The usable-answer rate and the verdict's accuracy, scored against answers that game a final-answer rate (no
command run, a command it never ran, markup, an empty summary) as well as against good ones."""

from __future__ import annotations

from terminus.eval.usable import fallback_rate, usable_rate, verdict_correct
from terminus.judge.form import usable_answer

GOOD = [{"command": "pytest -q", "summary": "1 failed: tests/test_a.py::test_b (tests/test_a.py:4), 3 passed"}]


def test_a_good_answer_is_usable_and_the_gamed_ones_are_not():
    ran = ["python3 -m pytest -q 2>&1"]
    assert usable_answer(GOOD, ran)
    assert not usable_answer(GOOD, [])  # no command ran: an answer from nowhere
    assert not usable_answer([{"command": "cargo test", "summary": "all passed"}], ran)  # a command it never ran
    assert not usable_answer([{"command": "pytest -q", "summary": '<tool_call>{"name": "x"}'}], ran)  # markup
    assert not usable_answer([{"command": "pytest -q", "summary": " "}], ran)  # nothing said
    assert not usable_answer(None, ran) and not usable_answer([], ran)
    # one good pair beside one invented command is not usable: every Command: must have run
    assert not usable_answer([*GOOD, {"command": "make lint", "summary": "clean"}], ran)


def test_rates_over_the_subagent_calls_of_an_episode():
    calls = [
        {"final_answer": GOOD, "commands": ["pytest -q"]},
        {"final_answer": GOOD, "commands": []},
    ]
    assert usable_rate(calls) == 0.5 and usable_rate([]) is None
    direct = [{"command": "pytest -q", "after": 1}]  # the main agent ran its terminal after the first answer
    assert fallback_rate(calls, direct) == 0.5 and fallback_rate([], direct) is None


def test_the_verdict_is_checked_against_the_tasks_truth():
    failing = {"exit_code": 1}
    assert verdict_correct("1 failed, 3 passed (exit code 1)", failing) == 1.0
    assert verdict_correct("all tests pass", failing) == 0.0  # wrong
    assert verdict_correct("I looked at the repository", failing) == 0.0  # no verdict is not a right one
    assert verdict_correct("all 4 tests passed", {"exit_code": 0}) == 1.0
    assert verdict_correct("anything", {}) is None  # no truth recorded


def test_the_shares_of_subagent_calls_get_a_wilson_interval_at_a_handful_of_tasks():
    """Usable answers, fallbacks and reruns are rates: at 3 tasks all 1.0 the range would say [1, 1]; Wilson says
    how little 3 tasks show (issue 45: rates get a binomial interval and print n)."""
    from terminus.eval.summary import interval
    from terminus.stats import wilson

    by_task = {"a": [1.0], "b": [1.0], "c": [1.0]}
    for metric in ("usable_answer_rate", "fallback_rate", "rerun_rate"):
        assert interval(by_task, metric, 100) == (1.0, *wilson(1.0, 3))
    assert interval(by_task, "subagent_turns", 100) == (1.0, 1.0, 1.0)  # not a rate: the range below 10 tasks
