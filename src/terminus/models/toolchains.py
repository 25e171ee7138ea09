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
    return match.group(1).split(".")[0] if match else None


def pytest(command: str, text: str, code: int | None) -> list[str]:
    facts = []
    counts = _first(r"^=*\s*((?:\d+ \w+(?: \w+)?,? ?)+) in [\d.]+s", text)
    facts.append(f"pytest: {counts.group(1).strip()}" if counts else "pytest did not report a summary")
    facts += _failing(re.findall(r"^(?:FAILED|ERROR) (\S+)", text, re.M), limit=10, count_rest=True)
    where = re.findall(r"^(\S+\.py):(\d+): (\w+(?:Error|Exception))", text, re.M)
    if where:
        path, line, error = where[0]
        message = _first(rf"^E\s+{error}: (.*)$", text)
        facts.append(f"first failure: {error} at {path}:{line}" + (f" ({message.group(1)[:160]})" if message else ""))
    elif collection := _first(r'^E\s+File "([^"]+)", line (\d+)[\s\S]*?^E\s+(\w+(?:Error|Exception)):? ?(.*)$', text):
        path, line, error, message = collection.groups()
        facts.append(f"collection error: {error} at {path}:{line}" + (f" ({message[:160]})" if message else ""))
    return facts


def node_test(command: str, text: str, code: int | None) -> list[str]:
    facts = []
    passed, failed = _first(r"^# pass (\d+)", text), _first(r"^# fail (\d+)", text)
    if passed and failed:
        facts.append(f"node:test: {passed.group(1)} passed, {failed.group(1)} failed")
    names = re.findall(r"^\s*not ok \d+ - (.+)$", text, re.M)
    names = [n for n in names if not n.endswith(".js") and not n.endswith(".mjs")]
    facts += _failing(names, limit=10)
    loc = _first(r"\(([\w./-]+\.m?js):(\d+):\d+\)", text)
    if loc and names:
        facts.append(f"first failure at {loc.group(1)}:{loc.group(2)}")
    syntax = _first(r"^(?:# )?([\w./-]+\.m?js):(\d+)\n[\s\S]{0,600}?^(?:# )?SyntaxError: (.+)$", text)
    if syntax:
        path, line, message = syntax.groups()
        facts.append(f"the code does not load: SyntaxError at {path}:{line} ({message[:160]})")
    return facts


def c_build(command: str, text: str, code: int | None) -> list[str]:
    """cmake --build or make, whose log went to a file (`scripted.logged`): errors, warning count, tail."""
    facts = []
    errors = re.findall(r"^([\w./-]+\.(?:c|cc|cpp|h|hpp)):(\d+):\d+: (?:fatal )?error: (.+)$", text, re.M)
    counted = _first(r"^warnings: (\d+)$", text)
    warnings = int(counted.group(1)) if counted else len(re.findall(r"^[\w./-]+:\d+:\d+: warning:", text, re.M))
    if errors:
        path, line, message = errors[0]
        facts.append(f"build failed: {len(errors)} error(s); first at {path}:{line}: {message}")
    elif code == 0:
        facts.append("build succeeded")
    else:
        facts.append("build failed")
    facts.append(f"{warnings} warning(s)")
    return facts


def ctest(command: str, text: str, code: int | None) -> list[str]:
    facts = []
    summary = _first(r"(\d+)% tests passed, (\d+) tests failed out of (\d+)", text)
    if summary:
        failed, total = int(summary.group(2)), int(summary.group(3))
        facts.append(f"ctest: {total - failed} passed, {failed} failed of {total}")
    facts += _failing(re.findall(r"^\s*\d+ - (\S+) \(Failed\)", text, re.M))
    loc = _first(r"^([\w./-]+\.(?:c|cc|cpp)):(\d+): .*(?:FAIL|Assertion|assert)", text)
    if loc:
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
    if not facts:
        facts.append("build succeeded" if code == 0 else "failed")
    warnings = len(re.findall(r"^warning: (?!.*generated \d+ warnings?)", text, re.M))
    if "build" in command:
        facts.append(f"{warnings} warning(s)")
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
    where = _first(r"^\s+([\w./-]+_test\.go):(\d+): (.+)$", text)
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
    return ["succeeded" if code == 0 else "failed"]


@dataclass(frozen=True)
class Runner:
    name: str
    matches: Callable[[str], bool]  # on the command
    parse: Callable[[str, str, int | None], list[str]]  # (command, output, exit code) -> facts


# First match wins: the cmake build command also names its build folder, so it comes before ctest.
RUNNERS = (
    Runner("pytest", lambda c: "pytest" in c, pytest),
    Runner("node --test", lambda c: "node --test" in c, node_test),
    Runner("cmake/make build", lambda c: "cmake --build" in c or "make >" in c, c_build),
    Runner("ctest", lambda c: "ctest" in c, ctest),
    Runner("cargo", lambda c: "cargo " in c, cargo),
    Runner("go", lambda c: "go build" in c or "go test" in c, go),
    Runner("compileall", lambda c: "compileall" in c, compileall),
    Runner("any", lambda c: True, any_command),
)


def runner_for(command: str) -> Runner:
    return next(r for r in RUNNERS if r.matches(command))
