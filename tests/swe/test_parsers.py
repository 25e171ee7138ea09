"""Log parsers on the output formats of real runners; TRX on a sample in the exact TRX schema."""

from __future__ import annotations

import time

import pytest

from terminus.swe.parsers import PARSERS, ParserError, ParseTimeout, parse_log, parser_for
from terminus.swe.testids import normalise_test_id

from .repos import DATA

PYTEST = """tests/test_money.py::test_add PASSED                                      [ 20%]
tests/test_money.py::test_split[3] FAILED                                 [ 40%]
=========================== short test summary info ============================
PASSED tests/test_money.py::test_add
FAILED tests/test_money.py::test_split[3] - assert [333, 333, 333] == [334, 333, 333]
SKIPPED [1] tests/test_money.py:20: needs decimal
XFAIL tests/test_money.py::test_rounding - known
ERROR tests/test_io.py::test_read - FileNotFoundError
"""
GO = """=== RUN   TestParse
=== RUN   TestParse/empty
    size_test.go:12: ParseSize("") = 0, <nil>; want an error
--- FAIL: TestParse (0.00s)
    --- FAIL: TestParse/empty (0.00s)
    --- PASS: TestParse/bytes (0.00s)
--- PASS: TestBytes (0.00s)
--- SKIP: TestSlow (0.00s)
FAIL
FAIL	example.com/units	0.003s
"""
JEST = """PASS src/slug.test.js
  slugify
    ✓ lowercases words (3 ms)
    ✕ trims separators at the ends (12 ms)
    ○ skipped handles emoji
"""
NODE_TAP = """TAP version 13
# Subtest: slugify
    # Subtest: lowercases words
    ok 1 - lowercases words
      ---
      duration_ms: 0.4
      ...
    # Subtest: trims separators
    not ok 2 - trims separators
      ---
      duration_ms: 1.1
      ...
    1..2
not ok 1 - slugify
# Subtest: joins words
ok 2 - joins words # SKIP not yet
1..2
"""
MOCHA = """
  slugify
    ✓ lowercases words
    ✓ joins words (41ms)
    1) trims separators
    - handles emoji


  2 passing (52ms)
  1 pending
  1 failing

  1) slugify
       trims separators:
     AssertionError: expected 'hi-' to equal 'hi'
"""
CARGO = """running 3 tests
test size::tests::parses_bytes ... ok
test size::tests::parses_megabytes ... FAILED
test size::tests::slow ... ignored

failures:
"""


def test_pytest_summary_and_verbose_lines():
    statuses = parse_log("pytest", PYTEST)
    assert statuses == {
        "tests/test_money.py::test_add": "PASSED",
        "tests/test_money.py::test_split[3]": "FAILED",
        "tests/test_money.py::test_rounding": "XFAIL",
        "tests/test_io.py::test_read": "ERROR",
    }


def test_go_test_with_subtests():
    assert parse_log("parse_log_gotest", GO) == {
        "TestParse": "FAILED",
        "TestParse/empty": "FAILED",
        "TestParse/bytes": "PASSED",
        "TestBytes": "PASSED",
        "TestSlow": "SKIPPED",
    }


def test_jest_marks_and_timings():
    assert parse_log("jest", JEST) == {
        "lowercases words": "PASSED",
        "trims separators at the ends": "FAILED",
        "skipped handles emoji": "SKIPPED",
    }


def test_node_tap_nesting_and_skip():
    statuses = parse_log("node", NODE_TAP)
    assert statuses["lowercases words"] == "PASSED"
    assert statuses["slugify > trims separators"] == "FAILED"
    assert statuses["slugify"] == "FAILED"
    assert statuses["joins words"] == "SKIPPED"


def test_mocha_spec_reporter():
    assert parse_log("mocha", MOCHA) == {
        "lowercases words": "PASSED",
        "joins words": "PASSED",
        "trims separators": "FAILED",
        "handles emoji": "SKIPPED",
    }


def test_cargo():
    assert parse_log("cargo", CARGO) == {
        "size::tests::parses_bytes": "PASSED",
        "size::tests::parses_megabytes": "FAILED",
        "size::tests::slow": "SKIPPED",
    }


def test_trx_sample_in_a_test_log():
    """A TRX file as `dotnet test --logger trx` writes it, printed after the build output."""
    log = "  Determining projects to restore...\n  StringKit -> /testbed/bin/StringKit.dll\n"
    log += (DATA / "sample.trx").read_text().split("\n", 1)[1]  # `cat` prints the XML declaration too; drop it
    statuses = parse_log("trx", log)
    assert statuses["StringKit.Tests.TruncateTests.KeepsShortText"] == "PASSED"
    assert statuses["StringKit.Tests.TruncateTests.AddsEllipsis"] == "FAILED"
    assert statuses["StringKit.Tests.TruncateTests.HandlesSurrogatePairs"] == "SKIPPED"
    # A theory: each case under its display name; the method fails if any case fails.
    assert statuses["StringKit.Tests.TruncateTests.RespectsLength(length: 3)"] == "PASSED"
    assert statuses["StringKit.Tests.TruncateTests.RespectsLength(length: 0)"] == "FAILED"
    assert statuses["StringKit.Tests.TruncateTests.RespectsLength"] == "FAILED"
    with pytest.raises(ParserError, match="not well-formed"):
        parse_log("trx", "<TestRun><Results></TestRun>")


def test_unknown_parser_and_timing_suffixes():
    with pytest.raises(ParserError, match="unknown log parser 'nunit'"):
        parser_for("nunit")
    assert normalise_test_id("adds numbers [1.3 ms]") == "adds numbers"
    assert normalise_test_id("adds numbers (5ms)") == "adds numbers"
    assert normalise_test_id("adds numbers in 0.5 sec") == "adds numbers"
    assert normalise_test_id("main 5 sec") == "main 5 sec"  # `in` must follow a space


# Lines a model patch can make its tests print, each about 1 MB: every shape that made a parser (or the id
# normaliser) backtrack, so that one grade took minutes.
SPACES = " " * 500_000
HOSTILE = {
    "colons": "::" * 60_000,
    "colons-1mb": "::" * 500_000,
    "pytest-id": "PASSED " + "::" * 500_000,
    "pytest-last": "a::b " + SPACES + "x" + SPACES + "y",
    "mark": "✓ a" + SPACES + "b" + SPACES + "c",
    "mark-timing": "✓ a" + " (" * 500_000,
    "tap": "ok 1 - a" + SPACES + "b" + SPACES + "c",
    "tap-hashes": "not ok 2 - " + "# " * 500_000,
    "subtest": "# Subtest: a" + SPACES + "b" + SPACES + "c",
    "mocha": "  1) a" + SPACES + "b" + SPACES + "c",
    "trx": "<TestRun " * 120_000,
    "django": "a ... " * 170_000,
    "suffix": " [" * 500_000 + "1 ms]",
    "in-sec": " in" * 330_000,
}


@pytest.mark.timeout(120)
@pytest.mark.parametrize("name", sorted(PARSERS))
def test_every_parser_is_linear_on_a_1mb_line(name):
    """Each hostile line, alone and between real result lines, parses in well under a second a megabyte (the old
    patterns took minutes on `"::" * 60000`); the ids found are normalised in linear time too."""
    for shape, line in HOSTILE.items():
        log = f"PASSED t.py::test_a\n✓ lowercases words\nok 1 - joins words\n{line}\n{line}\n"
        started = time.monotonic()
        statuses = parse_log(name, log)
        for test in statuses:
            normalise_test_id(test)
        normalise_test_id(line)
        took = time.monotonic() - started
        assert took < 5, f"{name} took {took:.1f} s on {shape}"
    assert parse_log("pytest", "PASSED t.py::test_a\n" + HOSTILE["colons"]) == {"t.py::test_a": "PASSED"}


def test_a_parse_past_its_budget_stops():
    log = "PASSED t.py::test_a\n" * 200_000
    assert len(parse_log("pytest", log, budget_s=None)) == 1
    with pytest.raises(ParseTimeout, match="pytest log parser passed its time budget of 0 s"):
        parse_log("pytest", log, budget_s=0)


def test_pro_json_of_the_wrong_shape_is_a_parser_error():
    with pytest.raises(ParserError, match="nested too deeply"):
        parse_log("pro-json", '{"tests": ' + "[" * 100_000)
    with pytest.raises(ParserError, match="not a list"):
        parse_log("pro-json", '{"tests": 5}')
    assert parse_log(
        "pro-json", '{"tests": [1, {"name": ["x"], "status": "PASSED"}, {"name": "a", "status": "FAILED"}]}'
    ) == {"a": "FAILED"}
