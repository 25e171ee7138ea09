"""What a model reads has no wall-clock text: the same command's output reads the same in two runs, and nothing
else in it changes."""

from __future__ import annotations

import pytest

from terminus.timing import model_view, normalise_timing


@pytest.mark.parametrize(
    ("first", "second"),
    [
        ("===== 3 passed, 1 failed in 0.03s =====", "===== 3 passed, 1 failed in 1.27s ====="),
        ("ok  \texample.com/units\t0.002s", "ok  \texample.com/units\t0.113s"),
        ("Total Test time (real) =   0.01 sec", "Total Test time (real) =   2.50 sec"),
        ("Finished `test` profile target(s) in 0.52s", "Finished `test` profile target(s) in 12.00s"),
        ("Ran 4 tests in 0.001s", "Ran 4 tests in 0.010s"),
        ("# duration_ms 12.345", "# duration_ms 3.5"),
        ("✔ adds (0.5ms)", "✔ adds (13ms)"),
        ("real\t0m0.003s", "real\t1m2.500s"),
        ("Time Elapsed 00:00:01.23", "Time Elapsed 00:01:11.90"),
        ("Time:        0.512 s", "Time:        3 s"),
        ("self = <idna.codec.Codec object at 0x7fa68608c050>", "self = <idna.codec.Codec object at 0x7f14063466d0>"),
    ],
)  # fmt: skip
def test_two_timings_of_one_output_read_the_same(first, second):
    assert first != second and normalise_timing(first) == normalise_timing(second)


@pytest.mark.parametrize(
    "text",
    [
        "3 tests, 2 users, 5 warnings; 12 passed, 0 failed",
        "src/billing/core.py:12: AssertionError: assert 22 == 120",
        "tests/test_money.py::test_add_3s FAILED",
        "version 1.2.3s",
        "error[E0308]: mismatched types at src/lib.rs:14:5",
    ],
)
def test_counts_names_and_locations_are_left_alone(text):
    assert normalise_timing(text) == text


def test_model_view_changes_only_tool_messages_and_copies():
    messages = [
        {"role": "user", "content": "it took 3s last time"},
        {"role": "tool", "content": "1 passed in 0.01s\n[exit code 0]"},
    ]
    view = model_view(messages)
    assert view[0] is messages[0] and view[1]["content"] == "1 passed in ?s\n[exit code 0]"
    assert messages[1]["content"] == "1 passed in 0.01s\n[exit code 0]"  # the trajectory keeps the raw output
