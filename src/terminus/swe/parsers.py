"""Log parsers: a test runner's output -> {test id: status}. Statuses follow SWE-bench's `TestStatus`:
PASSED, FAILED, SKIPPED, ERROR, XFAIL. Test ids are what the datasets put in FAIL_TO_PASS / PASS_TO_PASS:

- pytest (`-rA` summary or `-v` lines): `tests/test_x.py::test_a[param]`;
- go test (`-v`): `TestName`, subtests `TestName/case`;
- jest (`--verbose`), node's test runner (spec or TAP reporter), mocha (spec reporter): the test's title;
  nested node tests also under `parent > child`;
- cargo test: `module::test_name`;
- TRX (`dotnet test --logger trx`, the XML printed into the log): the `testName` of each UnitTestResult and
  the fully qualified `Namespace.Class.Method` of its TestDefinition.
"""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from collections.abc import Callable

from terminus.errors import TerminusError

PASSED, FAILED, SKIPPED, ERROR, XFAIL = "PASSED", "FAILED", "SKIPPED", "ERROR", "XFAIL"
PASSING = (PASSED, XFAIL)  # SWE-bench's test_passed: an expected failure that fails counts as a pass


class ParserError(TerminusError, ValueError):
    pass


# -- pytest ------------------------------------------------------------------------------------------------
_PYTEST_STATUSES = ("PASSED", "FAILED", "SKIPPED", "ERROR", "XFAIL", "XPASS")
_PYTEST_FIRST = re.compile(rf"^({'|'.join(_PYTEST_STATUSES)})\s+(\S+)")
_PYTEST_LAST = re.compile(rf"^(\S+::\S*)\s+({'|'.join(_PYTEST_STATUSES)})(?:\s|$)")


def parse_pytest(log: str) -> dict[str, str]:
    """`PASSED tests/t.py::test_a` (the -rA summary) and `tests/t.py::test_a PASSED [ 50%]` (-v)."""
    statuses: dict[str, str] = {}
    for line in log.splitlines():
        line = line.strip()
        if m := _PYTEST_FIRST.match(line):
            status, test = m.groups()
            if status == "SKIPPED" and test.startswith("["):  # "SKIPPED [2] file:line: reason" counts skips
                continue
        elif m := _PYTEST_LAST.match(line):
            test, status = m.groups()
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
    return {m.group(2): mapping[m.group(1)] for line in log.splitlines() if (m := _GO.match(line))}


# -- jest, node --test (spec and TAP), mocha -----------------------------------------------------------
_TIMING = re.compile(r"\s*\((?:\d+(?:\.\d+)?\s*m?s)\)\s*$")
_MARK = re.compile(r"^(\s*)(✓|✔|√|✕|✖|×|○|﹣|-)\s+(.+?)\s*$")
_MARK_STATUS = {"✓": PASSED, "✔": PASSED, "√": PASSED, "✕": FAILED, "✖": FAILED, "×": FAILED, "○": SKIPPED}
_TAP = re.compile(r"^(\s*)(ok|not ok)\s+\d+\s*(?:-\s*)?(.*?)\s*(?:#\s*(SKIP|TODO)\b.*)?$", re.I)
_SUBTEST = re.compile(r"^(\s*)# Subtest: (.+?)\s*$")


def _title(text: str) -> str:
    return _TIMING.sub("", text).strip()


def parse_jest(log: str) -> dict[str, str]:
    """jest --verbose: `✓ adds (3 ms)`, `✕ fails`, `○ skipped` (also node's spec reporter: ✔ / ✖)."""
    statuses: dict[str, str] = {}
    for line in log.splitlines():
        m = _MARK.match(line)
        if m and m.group(2) in _MARK_STATUS:
            statuses[_title(m.group(3))] = _MARK_STATUS[m.group(2)]
    return statuses


def parse_tap(log: str) -> dict[str, str]:
    """TAP as node --test prints it when not on a terminal: `ok 1 - name`, `not ok 2 - name`, `# SKIP`.
    Nested tests (`# Subtest: parent` then indented results) also get the id `parent > child`."""
    statuses: dict[str, str] = {}
    stack: list[tuple[int, str]] = []  # open subtests: (indent, name)
    for line in log.splitlines():
        if m := _SUBTEST.match(line):
            indent = len(m.group(1))
            while stack and stack[-1][0] >= indent:
                stack.pop()
            stack.append((indent, m.group(2)))
            continue
        m = _TAP.match(line)
        if not m or not m.group(3):
            continue
        indent, name = len(m.group(1)), _title(m.group(3))
        status = SKIPPED if m.group(4) else (PASSED if m.group(2).lower() == "ok" else FAILED)
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


_MOCHA_FAIL = re.compile(r"^\s+\d+\) (.+?)\s*$")


def parse_mocha(log: str) -> dict[str, str]:
    """mocha's spec reporter: `✓ passes (5ms)`, `1) fails` in the listing, `- pending` for skipped tests.
    The failure details after `N failing` repeat the numbers with the suite path: those lines are ignored."""
    statuses: dict[str, str] = {}
    for line in log.splitlines():
        if re.match(r"^\s*\d+ failing\b", line):
            break
        m = _MARK.match(line)
        if m and m.group(2) in ("✓", "✔", "√"):
            statuses[_title(m.group(3))] = PASSED
        elif m and m.group(2) == "-" and len(m.group(1)) >= 2:
            statuses[_title(m.group(3))] = SKIPPED
        elif m := _MOCHA_FAIL.match(line):
            statuses[_title(m.group(1))] = FAILED
    return statuses


# -- cargo test ----------------------------------------------------------------------------------------
_CARGO = re.compile(r"^test (\S+) \.\.\. (ok|FAILED|ignored)\b")


def parse_cargo(log: str) -> dict[str, str]:
    mapping = {"ok": PASSED, "FAILED": FAILED, "ignored": SKIPPED}
    return {m.group(1): mapping[m.group(2)] for line in log.splitlines() if (m := _CARGO.match(line))}


# -- TRX (Visual Studio test results, dotnet test --logger trx) ----------------------------------------
_TRX_BLOCK = re.compile(r"<TestRun\b.*?</TestRun>", re.S)
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


def parse_trx(log: str) -> dict[str, str]:
    """Every TestRun document in the log (a test command prints the .trx files it wrote)."""
    statuses: dict[str, str] = {}
    blocks = _TRX_BLOCK.findall(log)
    for block in blocks:
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
    return {t["name"]: t["status"] for t in payload.get("tests", []) if "name" in t and "status" in t}


_DJANGO = re.compile(r"^(.+?) \.\.\. (ok|OK|FAIL|ERROR|skipped.*)$")


def parse_django(log: str) -> dict[str, str]:
    """Django's runtests.py --verbosity 2: `test_x (module.Class) ... ok | FAIL | ERROR | skipped '...'`."""
    mapping = {"ok": PASSED, "OK": PASSED, "FAIL": FAILED, "ERROR": ERROR}
    statuses = {}
    for line in log.splitlines():
        if m := _DJANGO.match(line.strip()):
            statuses[m.group(1)] = mapping.get(m.group(2), SKIPPED)
    return statuses


def parse_sympy(log: str) -> dict[str, str]:
    """sympy's bin/test --verbose: `test_name ok`, `test_name F`, `test_name E`."""
    mapping = {"ok": PASSED, "F": FAILED, "E": ERROR}
    statuses = {}
    for line in log.splitlines():
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


def parse_log(name: str, log: str) -> dict[str, str]:
    return parser_for(name)(log)


_SUFFIXES = (
    re.compile(r"\s*\[\s*\d+(?:\.\d+)?\s*(?:ms|s)\s*\]\s*$", re.I),
    re.compile(r"\s+in\s+\d+(?:\.\d+)?\s+(?:msec|sec)\b", re.I),
    re.compile(r"\s*\(\s*\d+(?:\.\d+)?\s*(?:ms|s)\s*\)\s*$", re.I),
)


def normalise_test_id(name: str) -> str:
    """Timing suffixes (`foo [1.3 ms]`, `foo (5ms)`) differ from run to run: SWE-rebench-V2 strips them on
    both sides before comparing, and so do we."""
    for pattern in _SUFFIXES:
        name = pattern.sub("", name)
    return name.strip()
