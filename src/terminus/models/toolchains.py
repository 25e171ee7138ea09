"""Reading a terminal observation back: its status line (exit code, timed out) and, per runner, the facts a
main agent needs from the output (counts, failing tests, first error with file:line, warnings).

`RUNNERS` is the table: the first runner whose matcher accepts the command parses its output. Each parser takes
the command, the output with workspace paths made relative, and the exit code, and returns its facts.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from terminus.agent.terminal import EXIT_STATUS, TIMEOUT_STATUS
from terminus.models.jslogs import js_test, node_test


def _template(template: str, field: str, pattern: str) -> str:
    """A regex for a status template: the text up to `{field...}` literal, the field as `pattern`, the rest literal."""
    head, rest = template.split("{" + field, 1)
    return re.escape(head) + pattern + re.escape(rest.split("}", 1)[1])


_EXIT = re.compile(_template(EXIT_STATUS, "exit_code", r"(-?\d+)") + r"\s*$")
_TIMED_OUT = TIMEOUT_STATUS.split("{", 1)[0]


@dataclass(frozen=True)
class Status:
    exit_code: int | None  # None: the command was killed (timed out, or too much output) before it exited
    timed_out: bool


def read_status(observation: str) -> Status:
    """How a command ended, from the status line `agent.terminal.observation` puts last."""
    match = _EXIT.search(observation)
    timed_out = _TIMED_OUT in observation.splitlines()[-1]
    return Status(int(match.group(1)) if match else None, timed_out)


def _first(pattern: str, text: str, flags: int = re.M) -> re.Match | None:
    return re.search(pattern, text, flags)


def _failing(names: list[str], limit: int | None = None, count_rest: bool = False) -> list[str]:
    """The `failing: a, b` fact (none when nothing failed): at most `limit` names, and `(+N more)` when asked."""
    if not names:
        return []
    shown = names[:limit] if limit else names
    rest = f" (+{len(names) - len(shown)} more)" if count_rest and len(names) > len(shown) else ""
    return ["failing: " + ", ".join(shown) + rest]


def missing_module(text: str) -> str | None:
    """The package a Python or Node import could not find, if any."""
    match = _first(r"ModuleNotFoundError: No module named '([\w.]+)'", text) or _first(
        r"Cannot find (?:module|package) '([^']+)'", text
    )
    if not match:
        return None
    name = match.group(1)
    # a relative path (`../lib`) is a file of the project, a scoped package (`@scope/x`) is one name
    return name if name.startswith((".", "/", "@")) else name.split("/")[0].split(".")[0]


def not_installed(text: str) -> str | None:
    """The program a shell could not find (`sh: 1: uvu: not found`): a script's runner that is not installed."""
    match = _first(r"^(?:/bin/)?(?:sh|bash)(?:: (?:line )?\d+)?: ([\w./@-]+): (?:command )?not found$", text)
    return match.group(1) if match else None


# pytest's short summary line: `FAILED tests/a.py::test_x[with space] - AssertionError: message` (the id runs to
# " - ", so parametrised ids with spaces stay whole).
# pytest 9's subtests print `SUBFAILED[msg] id - ...` and `SUBFAILED(k=v) id - ...`: the marker names the subtest.
_PYTEST_SUMMARY = re.compile(
    r"^(?:FAILED|ERROR|SUB(?:FAILED|ERROR)(\[[^\]\n]*\]|\((?:[^()\n]|\([^()\n]*\))*\))) (.+?)(?: - (.*))?$", re.M
)
# Where a failure happened, in each traceback style pytest prints: long/auto (`path:12: AssertionError`), short
# (`path:12: in test_x` followed by `E   ...`), line (`/abs/path:12: assert 1 == 2`).
_PYTEST_LOCATION = re.compile(r"^(\S+\.py):(\d+): (.*)$", re.M)
_PYTEST_SECTION = re.compile(r"^_{3,} (.+?) _{3,}$", re.M)
_ERROR = re.compile(r"^E\s+(?:([\w.]+(?:Error|Exception|Exit|Failed))(?::\s*(.*))?|(assert .*))$", re.M)


def _pytest_causes(text: str) -> dict[str, str]:
    """test -> `Error at path:line (message)` from each failure's section (long and short tracebacks)."""
    causes: dict[str, str] = {}
    sections = list(_PYTEST_SECTION.finditer(text))
    if not sections:  # --tb=line: one `path:line: message` per failure, in the order of the summary
        tests = [m.group(2).strip() for m in _PYTEST_SUMMARY.finditer(text)]
        lines = [m for m in _PYTEST_LOCATION.findall(text) if not m[2].startswith("in ")]
        if len(lines) == len(tests):
            for test, (path, line, message) in zip(tests, lines, strict=True):
                kind = "AssertionError" if message.startswith("assert") else message.split(":", 1)[0]
                causes[test] = f"{kind} at {path}:{line} ({message.strip()[:120]})"
        return causes
    for i, header in enumerate(sections):
        body = text[header.end() : sections[i + 1].start() if i + 1 < len(sections) else len(text)]
        body = body.split("short test summary info", 1)[0]
        locations = _PYTEST_LOCATION.findall(body)
        error = _ERROR.search(body)
        if not locations:
            continue
        path, line, rest = locations[-1]
        kind = (error.group(1) if error and error.group(1) else None) or (
            rest if re.fullmatch(r"[\w.]+(?:Error|Exception)", rest) else "AssertionError" if error else "failure"
        )
        message = (error.group(2) or error.group(3) or "") if error else ""
        causes[header.group(1)] = f"{kind} at {path}:{line}" + (f" ({message.strip()[:120]})" if message else "")
    return causes


# Fixtures a well-known plugin provides: a missing one names the plugin to install.
FIXTURE_PLUGINS = {
    "mocker": "pytest-mock",
    "benchmark": "pytest-benchmark",
    "freezer": "pytest-freezer",
    "httpserver": "pytest-httpserver",
    "event_loop": "pytest-asyncio",
}


def pytest(command: str, text: str, code: int | None) -> list[str]:
    facts = []
    counts = _first(r"^=*\s*((?:\d+ \w+(?: \w+)?,? ?)+) in [\d.?]+s", text)
    facts.append(f"pytest: {counts.group(1).strip()}" if counts else "pytest did not report a summary")
    every = [(m.group(2).strip() + (f" {m.group(1)}" if m.group(1) else ""), (m.group(3) or "").strip())
             for m in _PYTEST_SUMMARY.finditer(text)]  # fmt: skip
    # a test whose subtests failed is reported again as "contains N failed subtest(s)": its subtests are the news
    summary = [(test, msg) for test, msg in every if not re.fullmatch(r"contains \d+ failed subtests?", msg)]
    named = [test for test, _ in summary]
    # The terminal keeps head and tail: the summary lines it cut still count, as "(+N more)".
    reported = sum(int(n) for n in re.findall(r"(\d+) (?:failed|errors?)\b", counts.group(1))) if counts else 0
    reported -= len(every) - len(summary)
    facts += _failing(named, limit=10)
    if reported > min(len(named), 10) and named:
        facts[-1] += f" (+{reported - min(len(named), 10)} more)"
    where = re.findall(r"^(\S+\.py):(\d+): (\w+(?:Error|Exception))", text, re.M)
    if where:
        path, line, error = where[0]
        message = _first(rf"^E\s+{error}: (.*)$", text)
        facts.append(f"first failure: {error} at {path}:{line}" + (f" ({message.group(1)[:160]})" if message else ""))
    elif collection := _first(r'^E\s+File "([^"]+)", line (\d+)[\s\S]*?^E\s+(\w+(?:Error|Exception)):? ?(.*)$', text):
        path, line, error, message = collection.groups()
        facts.append(f"collection error: {error} at {path}:{line}" + (f" ({message[:160]})" if message else ""))
    # A fixture no installed plugin provides: every test using it errors at setup, with one cause.
    for fixture in dict.fromkeys(re.findall(r"^E\s+fixture '(\w+)' not found$", text, re.M)):
        plugin = FIXTURE_PLUGINS.get(fixture)
        facts.append(
            f"fixture '{fixture}' not found" + (f" (the {plugin} plugin provides it: not installed)" if plugin else "")
        )
    # Each failure's cause, in any traceback style: from its section, else from its summary line's message.
    # Failures at one place (a parametrised test) are stated once, with how many more failed there.
    causes = _pytest_causes(text)
    places: dict[str, list[str]] = {}
    for test, message in summary:
        short = test.split("::")[-1]
        if message.startswith("assert "):  # pytest's rewritten assert: its summary line drops the type
            message = f"AssertionError ({message})"
        cause = causes.get(short) or causes.get(test) or message[:120]
        if cause:
            places.setdefault(cause.split(" (", 1)[0], []).append(f"{short}: {cause}")
    stated = [same[0] + (f" (and {len(same) - 1} more there)" if len(same) > 1 else "") for same in places.values()]
    if stated and not (len(summary) == 1 and where):
        facts.append("causes: " + "; ".join(stated[:5]) + (f" (+{len(stated) - 5} more)" if len(stated) > 5 else ""))
    return facts


def toolchain_fact(text: str) -> str | None:
    """`ran with <path> <version>` from the line `scripted.with_toolchain` prints, when it is there."""
    match = _first(r"^\[toolchain: (\S*) (.+?)\]$", text)
    if not match:
        return None
    path, version = match.groups()
    return f"ran with {path or 'an unknown interpreter'} ({' '.join(version.split())[:80]})"


def c_build(command: str, text: str, code: int | None) -> list[str]:
    """cmake --build or make, whose log went to a file (`scripted.logged`): errors, warning count, tail."""
    facts = []
    errors = re.findall(r"^([\w./-]+\.(?:c|cc|cpp|h|hpp)):(\d+):\d+: (?:fatal )?error: (.+)$", text, re.M)
    counted = _first(r"^warnings: (\d+)$", text)
    warnings = int(counted.group(1)) if counted else len(re.findall(r"^[\w./-]+:\d+:\d+: warning:", text, re.M))
    located = re.findall(r"^([\w./-]+):(\d+):\d+: warning: (.+?)(?: \[-W[\w=-]+\])?$", text, re.M)
    if errors:
        path, line, message = errors[0]
        facts.append(f"build failed: {len(errors)} error(s); first at {path}:{line}: {message}")
    elif code == 0:
        facts.append("build succeeded")
    else:
        facts.append("build failed")
    facts.append(f"{warnings} warning(s)" + _places(located))
    return facts


def _places(located: list[tuple[str, str, str]], limit: int = 5) -> str:
    """`: path:line message; ...` for each distinct warning (at most `limit`, then how many more)."""
    unique = list(dict.fromkeys(f"{path}:{line} {message[:100]}" for path, line, message in located))
    if not unique:
        return ""
    more = f" (+{len(unique) - limit} more)" if len(unique) > limit else ""
    return ": " + "; ".join(unique[:limit]) + more


# Unity (C unit tests) prints `path:line:test_function:FAIL: message` for each failing test function.
_UNITY_FAIL = re.compile(r"^([\w./-]+\.c):(\d+):(\w+):FAIL:?\s*(.*)$", re.M)


def ctest(command: str, text: str, code: int | None) -> list[str]:
    facts = []
    summary = _first(r"(\d+)% tests passed, (\d+) tests failed out of (\d+)", text)
    if summary:
        failed, total = int(summary.group(2)), int(summary.group(3))
        facts.append(f"ctest: {total - failed} passed, {failed} failed of {total}")
    facts += _failing(re.findall(r"^\s*\d+ - (\S+) \(Failed\)", text, re.M))
    unity = list(dict.fromkeys(_UNITY_FAIL.findall(text)))
    if unity:
        shown = [
            f"{name} at {path}:{line}" + (f" ({message[:100]})" if message else "")
            for path, line, name, message in unity
        ]
        facts.append(
            "failing test functions: "
            + "; ".join(shown[:8])
            + (f" (+{len(shown) - 8} more)" if len(shown) > 8 else "")
        )
    loc = _first(r"^([\w./-]+\.(?:c|cc|cpp)):(\d+): .*(?:FAIL|Assertion|assert)", text)
    if loc and not unity:
        facts.append(f"first failure at {loc.group(1)}:{loc.group(2)}")
    return facts


def cargo(command: str, text: str, code: int | None) -> list[str]:
    """cargo build and cargo test: compile errors, per-target results, failing tests, the first panic."""
    facts = []
    err = _first(r"^error(?:\[(E\d+)\])?: (.+)\n\s*--> ([^\s:]+):(\d+):\d+", text)
    if err:
        code_id = " " + err.group(1) if err.group(1) else ""
        facts.append(f"compile error{code_id} at {err.group(3)}:{err.group(4)}: {err.group(2)}")
    results = re.findall(r"test result: \w+\. (\d+) passed; (\d+) failed; (\d+) ignored", text)
    if results:
        passed = sum(int(r[0]) for r in results)
        failed = sum(int(r[1]) for r in results)
        facts.append(f"cargo test: {passed} passed, {failed} failed")
    facts += _failing(re.findall(r"^test (\S+) \.\.\. FAILED", text, re.M))
    panic = _first(r"panicked at ([^\s:]+):(\d+):\d+:\n(.+)", text)
    if panic:
        facts.append(f"first panic at {panic.group(1)}:{panic.group(2)}: {panic.group(3).strip()[:160]}")
        left, right = _first(r"^\s+left: (.+)$", text), _first(r"^\s+right: (.+)$", text)
        if left and right:
            facts.append(f"left: {left.group(1).strip()[:80]}, right: {right.group(1).strip()[:80]}")
    # dependency resolution and other errors without a source location (offline and lockfile problems)
    other = _first(r"^error: ((?:failed to|no matching package|failed to select|could not|the lock file).+)$", text)
    if other and not err:
        offline = " (offline mode)" if "offline" in text else ""
        facts.append(f"dependency resolution failed{offline}: {other.group(1).strip()[:200]}")
        if required := _first(r"required by package `([^`(]+?)(?: \([^`]*\))?`", text):
            facts[-1] += f"; required by {required.group(1)}"
        if cause := _first(r"^Caused by:\n\s+(.+)$", text):
            facts[-1] += f"; caused by: {cause.group(1).strip()[:160]}"
    if not facts:
        facts.append("build succeeded" if code == 0 else "failed")
    warnings = re.findall(r"^warning: (?!.*generated \d+ warnings?)(.+)\n\s*--> ([^\s:]+):(\d+):\d+", text, re.M)
    if "build" in command and not (other and not err):  # nothing compiled when resolution failed
        count = len(re.findall(r"^warning: (?!.*generated \d+ warnings?)", text, re.M))
        facts.append(f"{count} warning(s)" + _places([(path, line, message) for message, path, line in warnings]))
    return facts


def go(command: str, text: str, code: int | None) -> list[str]:
    """go build and go test -v (filtered to the PASS/FAIL lines and each failure's last log line)."""
    facts = []
    err = _first(r"^(?:\./)?([\w./-]+\.go):(\d+):\d+: (.+)$", text)
    names = re.findall(r"^--- FAIL: (\w+)", text, re.M)  # top-level tests; subtests are indented
    passed = len(re.findall(r"^--- PASS: ", text, re.M))
    if "go test" in command:
        oks = len(re.findall(r"^ok\s", text, re.M))
        fails = len(re.findall(r"^FAIL[ \t]+\S+", text, re.M))
        counts = f"{passed} passed, {len(names)} failed; " if passed or names else ""
        facts.append(f"go test: {counts}(packages ok: {oks}, with failures: {fails})")
        if names:
            more = f" (+{len(names) - 10} more)" if len(names) > 10 else ""
            facts.append("failing tests: " + ", ".join(names[:10]) + more)
    skip = r"^\s+([\w./-]+_test\.go:\d+): (.+)\n\s*--- SKIP: (\S+)"  # the reason is logged before the result
    if skips := re.findall(skip, text, re.M):
        facts.append("skipped: " + "; ".join(f"{name} ({where}: {why[:80]})" for where, why, name in skips[:5]))
    unskipped = re.sub(skip, "", text, flags=re.M)
    where = _first(r"^\s+([\w./-]+_test\.go):(\d+): (.+)$", unskipped)
    if names and where:
        facts.append(f"first failure at {where.group(1)}:{where.group(2)}: {where.group(3)[:160]}")
    if err and not (names and "go test" in command):
        what = "compile error" if "go build" in command else "error"
        facts.append(f"{what} at {err.group(1)}:{err.group(2)}: {err.group(3)}")
    elif "go build" in command:
        facts.append("build succeeded" if code == 0 else "build failed")
    elif err:
        facts.append(f"first failure at {err.group(1)}:{err.group(2)}: {err.group(3)}")
    return facts


def compileall(command: str, text: str, code: int | None) -> list[str]:
    """python -m compileall, the Python "build": the first syntax error."""
    where = _first(r'File "(?:\./)?([^"]+)", line (\d+)[\s\S]*?^\s*(\w+Error): (.*)$', text)
    if where:
        path, line, error, message = where.groups()
        return [f"build failed: {error} at {path}:{line} ({message[:160]})"]
    return ["build succeeded" if code == 0 else "build failed"]


def any_command(command: str, text: str, code: int | None) -> list[str]:
    facts = ["succeeded" if code == 0 else "failed"]
    if target := _first(r"No rule to make target '([^']+)'", text):  # `make test` where the Makefile has none
        facts.append(f"the Makefile has no '{target.group(1)}' target")
    return facts


@dataclass(frozen=True)
class Runner:
    name: str
    matches: Callable[[str], bool]  # on the command
    parse: Callable[[str, str, int | None], list[str]]  # (command, output, exit code) -> facts


# First match wins: the cmake build command also names its build folder, so it comes before ctest.
RUNNERS = (
    Runner("pytest", lambda c: "pytest" in c, pytest),
    Runner(
        "npm test", lambda c: re.match(r"^(?:cd \S+ && )?(npm|yarn|pnpm|bun) (run )?test\b", c) is not None, js_test
    ),
    Runner("node --test", lambda c: "node --test" in c, node_test),
    Runner("cmake/make build", lambda c: "cmake --build" in c or "make >" in c, c_build),
    Runner("ctest", lambda c: "ctest" in c, ctest),
    Runner("cargo", lambda c: "cargo " in c, cargo),
    Runner("go", lambda c: "go build" in c or "go test" in c, go),
    Runner("compileall", lambda c: "compileall" in c, compileall),
    Runner("any", lambda c: True, any_command),
)


def runner_for(command: str) -> Runner:
    """The runner whose parser reads this command's output."""
    return next(r for r in RUNNERS if r.matches(command))
