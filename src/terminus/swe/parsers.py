"""Log parsers: a test runner's output -> {test id: status}. Statuses follow SWE-bench's `TestStatus`:
PASSED, FAILED, SKIPPED, ERROR, XFAIL. Test ids are what the datasets put in FAIL_TO_PASS / PASS_TO_PASS:

- pytest (`-rA` summary or `-v` lines): `tests/test_x.py::test_a[param]`;
- go test (`-v`): `TestName`, subtests `TestName/case`;
- jest (`--verbose`), node's test runner (spec or TAP reporter), mocha (spec reporter): the test's title;
  nested node tests also under `parent > child`;
- cargo test: `module::test_name`;
- TRX (`dotnet test --logger trx`, the XML printed into the log): the `testName` of each UnitTestResult and
  the fully qualified `Namespace.Class.Method` of its TestDefinition.

A log is the output of code a model wrote, so every parser runs in time linear in the log's length: no pattern
that can backtrack over a line (a lazy title before optional trailing spaces, a word split at `::`, a run of
spaces tried at every offset) is matched against a whole line; such shapes are taken apart with string methods.
Every parse also has a time budget on the host (`parse_log(..., budget_s=)`): a parse that passes it stops with
`ParseTimeout`, which the grade reports as its error instead of hanging.
"""

from __future__ import annotations

import contextvars
import json
import re
import time
import xml.etree.ElementTree as ET
from collections.abc import Callable, Iterator

from terminus.errors import TerminusError

PASSED, FAILED, SKIPPED, ERROR, XFAIL = "PASSED", "FAILED", "SKIPPED", "ERROR", "XFAIL"
PASSING = (PASSED, XFAIL)  # SWE-bench's test_passed: an expected failure that fails counts as a pass


class ParserError(TerminusError, ValueError):
    pass


class ParseTimeout(ParserError):
    """A parse passed its time budget and stopped: the log is not judged."""


# Seconds one parse may take on the host. A 16 MB log (the most the grader keeps) parses in about a second.
PARSE_BUDGET_S = 60.0
# The deadline of the parse running in this thread (a grade's instances parse in a pool of threads).
_DEADLINE: contextvars.ContextVar[float | None] = contextvars.ContextVar("terminus_parse_deadline", default=None)


def _check_deadline() -> None:
    deadline = _DEADLINE.get()
    if deadline is not None and time.monotonic() > deadline:
        raise ParseTimeout("the log parser passed its time budget and stopped")


def _lines(log: str) -> Iterator[str]:
    """`log.splitlines()`, one line at a time (the list of every line of a large log costs many times the log),
    checking the parse's deadline between lines."""
    start, end = 0, len(log)
    while start < end:
        stop = log.find("\n", start)
        if stop < 0:
            stop = end
        segment = log[start:stop]
        start = stop + 1
        _check_deadline()
        if segment:
            yield from segment.splitlines()  # \r, \v, \f and the Unicode separators, as splitlines splits them
        else:
            yield ""


# -- pytest ------------------------------------------------------------------------------------------------
_PYTEST_STATUSES = frozenset({"PASSED", "FAILED", "SKIPPED", "ERROR", "XFAIL", "XPASS"})


def parse_pytest(log: str) -> dict[str, str]:
    """`PASSED tests/t.py::test_a` (the -rA summary) and `tests/t.py::test_a PASSED [ 50%]` (-v): the line's
    first two words, a status and a test id, or a test id (with `::` after its first character) and a status."""
    statuses: dict[str, str] = {}
    for line in _lines(log):
        words = line.split(None, 2)
        if len(words) < 2:
            continue
        first, second = words[0], words[1]
        if first in _PYTEST_STATUSES:
            status, test = first, second
            if status == "SKIPPED" and test.startswith("["):  # "SKIPPED [2] file:line: reason" counts skips
                continue
        elif second in _PYTEST_STATUSES and "::" in first[1:]:
            test, status = first, second
        else:
            continue
        statuses[test] = PASSED if status == "XPASS" else status
    return statuses


# -- go test -v ----------------------------------------------------------------------------------------
_GO = re.compile(r"^\s*--- (PASS|FAIL|SKIP): (\S+)")


def parse_gotest(log: str) -> dict[str, str]:
    """`--- PASS: TestX (0.00s)`, indented for subtests `--- FAIL: TestX/case`. A package that does not
    build prints no test lines, so its tests are absent (absent counts as failed when grading)."""
    mapping = {"PASS": PASSED, "FAIL": FAILED, "SKIP": SKIPPED}
    return {m.group(2): mapping[m.group(1)] for line in _lines(log) if (m := _GO.match(line))}


# -- jest, node --test (spec and TAP), mocha -----------------------------------------------------------
_DURATION = re.compile(r"\d+(?:\.\d+)?\s*m?s")
_MARKS = frozenset("✓✔√✕✖×○﹣-")
_MARK_STATUS = {"✓": PASSED, "✔": PASSED, "√": PASSED, "✕": FAILED, "✖": FAILED, "×": FAILED, "○": SKIPPED}
_TAP_HEAD = re.compile(r"(\s*)(ok|not ok)\s+\d+\s*(?:-\s*)?", re.I)
_TAP_DIRECTIVE = re.compile(r"#\s*(SKIP|TODO)\b", re.I)
_SUBTEST = "# Subtest: "


def _title(text: str) -> str:
    """The title without a trailing duration `(3 ms)`."""
    text = text.rstrip()
    if text.endswith(")"):
        opening = text.rfind("(")
        if opening >= 0 and _DURATION.fullmatch(text, opening + 1, len(text) - 1):
            text = text[:opening]
    return text.strip()


def _mark(line: str) -> tuple[int, str, str] | None:
    """(indent, mark, text) of a line `<indent><mark><space><text>`, the text non-empty."""
    body = line.lstrip()
    if len(body) < 3 or body[0] not in _MARKS or not body[1].isspace():
        return None
    text = body[1:].strip()
    return (len(line) - len(body), body[0], text) if text else None


def parse_jest(log: str) -> dict[str, str]:
    """jest --verbose: `✓ adds (3 ms)`, `✕ fails`, `○ skipped` (also node's spec reporter: ✔ / ✖)."""
    statuses: dict[str, str] = {}
    for line in _lines(log):
        found = _mark(line)
        if found and found[1] in _MARK_STATUS:
            statuses[_title(found[2])] = _MARK_STATUS[found[1]]
    return statuses


def parse_tap(log: str) -> dict[str, str]:
    """TAP as node --test prints it when not on a terminal: `ok 1 - name`, `not ok 2 - name`, `# SKIP`.
    Nested tests (`# Subtest: parent` then indented results) also get the id `parent > child`."""
    statuses: dict[str, str] = {}
    stack: list[tuple[int, str]] = []  # open subtests: (indent, name)
    for line in _lines(log):
        body = line.lstrip()
        if body.startswith(_SUBTEST) and (subtest := body[len(_SUBTEST) :].rstrip()):
            indent = len(line) - len(body)
            while stack and stack[-1][0] >= indent:
                stack.pop()
            stack.append((indent, subtest))
            continue
        m = _TAP_HEAD.match(line)
        if not m:
            continue
        rest = line[m.end() :]
        directive = _TAP_DIRECTIVE.search(rest)  # the name ends where the first `# SKIP` / `# TODO` starts
        text = (rest[: directive.start()] if directive else rest).rstrip()
        if not text:
            continue
        indent, name = len(m.group(1)), _title(text)
        status = SKIPPED if directive else (PASSED if m.group(2).lower() == "ok" else FAILED)
        parents = [n for i, n in stack if i < indent]
        statuses[name] = status
        if parents:
            statuses[" > ".join([*parents, name])] = status
        while stack and stack[-1][0] >= indent:  # the result line closes its own subtest block
            stack.pop()
    return statuses


def parse_node(log: str) -> dict[str, str]:
    """node --test with either reporter (TAP off a terminal, spec with ✔/✖ marks)."""
    return parse_jest(log) | parse_tap(log)


_MOCHA_FAIL = re.compile(r"\s+\d+\) ")
_MOCHA_END = re.compile(r"\s*\d+ failing\b")


def parse_mocha(log: str) -> dict[str, str]:
    """mocha's spec reporter: `✓ passes (5ms)`, `1) fails` in the listing, `- pending` for skipped tests.
    The failure details after `N failing` repeat the numbers with the suite path: those lines are ignored."""
    statuses: dict[str, str] = {}
    for line in _lines(log):
        if _MOCHA_END.match(line):
            break
        found = _mark(line)
        if found and found[1] in ("✓", "✔", "√"):
            statuses[_title(found[2])] = PASSED
        elif found and found[1] == "-" and found[0] >= 2:
            statuses[_title(found[2])] = SKIPPED
        elif (m := _MOCHA_FAIL.match(line)) and (title := line[m.end() :].rstrip()):
            statuses[_title(title)] = FAILED
    return statuses


# -- cargo test ----------------------------------------------------------------------------------------
_CARGO = re.compile(r"^test (\S+) \.\.\. (ok|FAILED|ignored)\b")


def parse_cargo(log: str) -> dict[str, str]:
    mapping = {"ok": PASSED, "FAILED": FAILED, "ignored": SKIPPED}
    return {m.group(1): mapping[m.group(2)] for line in _lines(log) if (m := _CARGO.match(line))}


# -- TRX (Visual Studio test results, dotnet test --logger trx) ----------------------------------------
_TRX_OPEN, _TRX_CLOSE = "<TestRun", "</TestRun>"
_TRX_OUTCOME = {
    "Passed": PASSED,
    "Failed": FAILED,
    "NotExecuted": SKIPPED,
    "Error": ERROR,
    "Timeout": FAILED,
    "Aborted": ERROR,
    "Inconclusive": SKIPPED,
    "PassedButRunAborted": PASSED,
}


def _local(tag: str) -> str:
    return tag.rsplit("}", 1)[-1]


def _trx_blocks(log: str) -> Iterator[str]:
    """Each `<TestRun ...>...</TestRun>`, found with str.find (a lazy `.*?` from every `<TestRun` of a log
    without a closing tag would scan to its end once per opening)."""
    start = 0
    while (opening := log.find(_TRX_OPEN, start)) >= 0:
        after = opening + len(_TRX_OPEN)
        if after < len(log) and (log[after].isalnum() or log[after] == "_"):  # `<TestRunner`: not the tag
            start = after
            continue
        closing = log.find(_TRX_CLOSE, after)
        if closing < 0:
            return
        start = closing + len(_TRX_CLOSE)
        _check_deadline()
        yield log[opening:start]


def parse_trx(log: str) -> dict[str, str]:
    """Every TestRun document in the log (a test command prints the .trx files it wrote)."""
    statuses: dict[str, str] = {}
    for block in _trx_blocks(log):
        try:
            root = ET.fromstring(block)
        except ET.ParseError as err:
            raise ParserError(f"a TRX document in the log is not well-formed XML: {err}") from None
        qualified = {}
        for node in root.iter():
            if _local(node.tag) == "UnitTest":
                method = next((c for c in node if _local(c.tag) == "TestMethod"), None)
                if method is not None:
                    cls = method.get("className", "").split(",")[0].strip()
                    qualified[node.get("id")] = f"{cls}.{method.get('name')}" if cls else method.get("name")
        for node in root.iter():
            if _local(node.tag) != "UnitTestResult":
                continue
            status = _TRX_OUTCOME.get(node.get("outcome", ""), FAILED)
            for name in (node.get("testName"), qualified.get(node.get("testId"))):
                # Data-driven tests report one result per case: the test passes only if all cases do.
                if name and statuses.get(name, PASSED) == PASSED:
                    statuses[name] = status
    return statuses


def parse_pro_json(log: str) -> dict[str, str]:
    """The output.json of SWE-Bench Pro's per-instance parser.py, `{"tests": [{"name", "status"}]}`, as the
    grader prints it after running the official run_script.sh and parser.py in the sandbox."""
    start = log.rfind('{"tests"')
    if start < 0:
        return {}
    try:
        payload, _ = json.JSONDecoder().raw_decode(log[start:])
    except json.JSONDecodeError as err:
        raise ParserError(f"SWE-Bench Pro parser output is not JSON: {err}") from None
    except RecursionError:
        raise ParserError("SWE-Bench Pro parser output is nested too deeply to read") from None
    tests = payload.get("tests")
    if not isinstance(tests, list):
        raise ParserError("SWE-Bench Pro parser output: its `tests` is not a list")
    return {
        t["name"]: t["status"]
        for t in tests
        if isinstance(t, dict) and isinstance(t.get("name"), str) and isinstance(t.get("status"), str)
    }


_DJANGO = re.compile(r"^(.+?) \.\.\. (ok|OK|FAIL|ERROR|skipped.*)$")


def parse_django(log: str) -> dict[str, str]:
    """Django's runtests.py --verbosity 2: `test_x (module.Class) ... ok | FAIL | ERROR | skipped '...'`."""
    mapping = {"ok": PASSED, "OK": PASSED, "FAIL": FAILED, "ERROR": ERROR}
    statuses = {}
    for line in _lines(log):
        if m := _DJANGO.match(line.strip()):
            statuses[m.group(1)] = mapping.get(m.group(2), SKIPPED)
    return statuses


def parse_sympy(log: str) -> dict[str, str]:
    """sympy's bin/test --verbose: `test_name ok`, `test_name F`, `test_name E`."""
    mapping = {"ok": PASSED, "F": FAILED, "E": ERROR}
    statuses = {}
    for line in _lines(log):
        parts = line.strip().split()
        if len(parts) >= 2 and parts[0].startswith("test_") and parts[-1] in mapping:
            statuses[parts[0]] = mapping[parts[-1]]
    return statuses


PARSERS: dict[str, Callable[[str], dict[str, str]]] = {
    "pro-json": parse_pro_json,
    "django": parse_django,
    "sympy": parse_sympy,
    "pytest": parse_pytest,
    "gotest": parse_gotest,
    "jest": parse_jest,
    "node": parse_node,
    "tap": parse_tap,
    "mocha": parse_mocha,
    "cargo": parse_cargo,
    "trx": parse_trx,
}
# The names the datasets use (SWE-bench's parse_log_*, SWE-rebench-V2's install_config.log_parser).
ALIASES = {
    "go test": "gotest",
    "go_test": "gotest",
    "go": "gotest",
    "node-test": "node",
    "node --test": "node",
    "dotnet": "trx",
    "vitest": "jest",
    "parse_log_pytest": "pytest",
    "parse_log_pytest_v2": "pytest",
    "parse_log_pytest_options": "pytest",
    "parse_log_gotest": "gotest",
    "parse_log_go_test": "gotest",
    "parse_log_jest": "jest",
    "parse_log_mocha": "mocha",
    "parse_log_tap": "tap",
    "parse_log_node": "node",
    "parse_log_cargo": "cargo",
    "parse_log_trx": "trx",
    "parse_log_dotnet": "trx",
    "parse_log_vitest": "jest",
    "parse_log_django": "django",
    "parse_log_sympy": "sympy",
}


def parser_for(name: str) -> Callable[[str], dict[str, str]]:
    """The log parser a dataset row names (ours or SWE-bench's `parse_log_<name>` spelling)."""
    key = ALIASES.get(name, name)
    if key not in PARSERS:
        known = ", ".join(sorted(PARSERS))
        raise ParserError(f"unknown log parser {name!r}; known: {known} (and SWE-bench's parse_log_<name> aliases)")
    return PARSERS[key]


def parse_log(name: str, log: str, budget_s: float | None = PARSE_BUDGET_S) -> dict[str, str]:
    """The statuses of the log, by the parser `name`; past `budget_s` seconds (None: no budget) the parse stops
    with ParseTimeout."""
    parser = parser_for(name)
    token = _DEADLINE.set(None if budget_s is None else time.monotonic() + budget_s)
    try:
        statuses = parser(log)
        _check_deadline()
        return statuses
    except ParseTimeout:
        raise ParseTimeout(f"the {name} log parser passed its time budget of {budget_s:g} s and stopped") from None
    finally:
        _DEADLINE.reset(token)
