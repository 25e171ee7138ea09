"""`scripted`: a deterministic expert subagent with no model, the offline teacher and the tests' reference.

It works only through the terminal, like a model: it first lists the build files, picks the project root
and toolchain, reads what the project declares (a Node project's `package.json` test script and lockfile, a
Python `src/` layout: `models.project`), runs the build and/or the tests the query asks for (its command, files,
test names, variables), reads the real output, and summarises each command with the facts a main agent needs
(counts, failing tests with file:line, expected and actual values, warnings with file:line, skips, a missing
dependency or an unresolvable one, and the fix a developer would apply).
"""

from __future__ import annotations

import hashlib
import json
import re
import shlex
from pathlib import PurePosixPath

from terminus.agent.terminal import TOOL_NAME
from terminus.models.asked import Asked, read_query
from terminus.models.project import Declared, go_run_pattern, missing_fact, node_filter
from terminus.models.toolchains import read_status, runner_for, toolchain_fact

DISCOVER = "find . -maxdepth 3 -not -path '*/.*' -not -path '*/node_modules/*' | sort | head -500"
# Build file -> (kind, priority). Lower priority wins when several sit in the same folder.
MARKERS = {
    "Cargo.toml": ("rust", 0),
    "go.mod": ("go", 0),
    "CMakeLists.txt": ("cmake", 0),
    "package.json": ("node", 1),
    "pyproject.toml": ("python", 1),
    "setup.py": ("python", 2),
    "Makefile": ("make", 3),
}
BUILD_WORDS = re.compile(r"\b(build|compile|compiles|compiling|make)\b", re.I)
TEST_WORDS = re.compile(r"\b(tests?|testing|suite|pass|fail\w*|unit)\b", re.I)
NO_TEST = re.compile(r"\b(only|just)\s+(build|compile)|\bdo(?:n't| not) run (?:the )?tests\b", re.I)


def logged(build: str) -> str:
    """A build whose full log goes to a file; the terminal shows errors and warnings (each with its file:line),
    the warning count and the tail."""
    return (
        f'{build} > "$TMPDIR/build.log" 2>&1; rc=$?; '
        f'grep -E ": (fatal )?(error|warning)" "$TMPDIR/build.log" | head -20; '
        f'echo "warnings: $(grep -c ": warning:" "$TMPDIR/build.log")"; tail -3 "$TMPDIR/build.log"; exit $rc'
    )


def filtered(command: str, keep: str) -> str:  # keep: a filter reading the log named by $LOG
    """A run whose full log goes to a file; the terminal shows the lines that matter, the size and the tail.

    This is how the subagent keeps verbose output out of its own context too: hundreds of log lines from
    passing tests would otherwise push the failure out of the truncated observation.
    """
    return (
        f'{command} > "$TMPDIR/run.log" 2>&1; rc=$?; LOG="$TMPDIR/run.log"; {keep} | head -200 > "$TMPDIR/kept.log"; '
        f'if [ -s "$TMPDIR/kept.log" ]; then cat "$TMPDIR/kept.log"; else tail -30 "$LOG"; fi; '
        f'echo "[full log: $(wc -l < "$LOG") lines]"; exit $rc'
    )


def shown(command: str) -> str:
    """The command as the answer names it: a run whose log went to a file is named by its run, not its filter, and
    the toolchain line (`with_toolchain`) is left out."""
    command = without_toolchain(command)
    for marker in (' > "$TMPDIR/run.log"', ' > "$TMPDIR/build.log"'):
        if marker in command:
            return command.split(marker, 1)[0] + "  (full log kept in the sandbox, filtered)"
    return command


# Which interpreter or toolchain ran, and its version: a user's venv and the system's python3 give different answers,
# and an answer that does not say which ran cannot be trusted (`toolchains.toolchain_fact` reads the line back).
TOOLCHAIN_MARK = '; echo "[toolchain:'
VERSION_PROBES = {
    "python": "python3 --version",
    "python3": "python3 --version",
    "pytest": "pytest --version",
    "node": "node --version",
    "npm": "node --version",
    "npx": "node --version",
    "cargo": "cargo --version",
    "go": "go version",
    "make": "make --version | head -1",
    "cmake": "cmake --version | head -1",
    "ctest": "cmake --version | head -1",
}
KIND_PROGRAM = {"python": "python3", "node": "node", "cmake": "cmake", "rust": "cargo", "go": "go", "make": "make"}


def with_toolchain(command: str, program: str | None) -> str:
    """`command` followed by a line naming the program's path and version; the command's exit status is kept."""
    probe = VERSION_PROBES.get(program or "")
    if probe is None:
        return command
    first = program if program in ("python", "python3", "pytest") else probe.split()[0]
    line = f'{TOOLCHAIN_MARK} $(command -v {first}) $({probe} 2>&1)]"; exit $rc'
    if command.endswith("; exit $rc"):  # the filtered and logged runs keep their status in rc already
        return command.removesuffix("; exit $rc") + line
    return command + "; rc=$?" + line


def without_toolchain(command: str) -> str:
    """The command without the toolchain line `with_toolchain` added (and the `rc=$?` before it)."""
    return command.split(TOOLCHAIN_MARK, 1)[0].removesuffix("; rc=$?")


NODE_KEEP = (
    r"grep -E '^\s*(not )?ok [0-9]+ - |^# (tests|pass|fail|skipped|cancelled) |\.m?js:[0-9]+:[0-9]+\)|"
    r"^# \S+\.m?js:[0-9]+$|"
    r"^# (SyntaxError|Error)|Cannot find (module|package)|^\s+(error|expected|actual):' "
    '"$LOG"'
)
CARGO_KEEP = (
    r"grep -E '^test result:|^test .* FAILED$|^error(\[E[0-9]+\])?:|^\s+--> |panicked at|^assertion|"
    r"^\s+(left|right):' "
    '"$LOG"'
)
# go -v prints a failing (or skipped) test's last log line, its t.Fatalf or t.Skip reason, just before "--- FAIL"
GO_KEEP = (
    "awk '/^[[:space:]]*--- (FAIL|SKIP)/ {print prev} "
    '/^(--- (PASS|FAIL)|[[:space:]]*--- SKIP|ok |FAIL)/ {print} {prev = $0}\' "$LOG"'
)
# Any JavaScript runner a package.json script starts (tape, uvu, jest, vitest, mocha, node:test): its counts, failing
# tests, expected/actual values, locations, and a missing program or module.
JS_KEEP = (  # POSIX classes: the sandbox's awk may be mawk. Values sit on the lines after some markers: a YAML
    # block (`expected: |-`), mocha's `+ expected - actual` diff, the title after mocha's numbered failure.
    r"awk '{ if (n > 0) { print; n-- } else if (p ~ /(expected|actual): [|]-?$|^[[:space:]]+[0-9]+[)] / || "
    r"$0 ~ /^[[:space:]]*(not )?ok [0-9]+ |^# (tests|pass|fail|skip)|✘|✖|✕|×|FAIL|●|failing|passing|pending|"
    r"Tests:|Test Files|Total:|Passed:|Skipped:|not found|Cannot find|Error|[Ee]xpected|[Aa]ctual|Received|"
    r"^[[:space:]]+[0-9]+[)] |[.][cm]?[jt]s:[0-9]+:[0-9]+/) print; if ($0 ~ /expected - actual$/) n = 4; p = $0 }' "
    '"$LOG"'
)


def _js_keep(declared: Declared) -> str:
    """node:test's own filter for a script that is `node --test` (its reader needs the file:line lines it keeps)."""
    return NODE_KEEP if re.match(r"node (?:--[\w-]+ )*--test\b", declared.test_script or "") else JS_KEEP


def _python_env(declared: Declared, asked: Asked, root: str) -> str:
    """`PYTHONPATH=src ` for a src layout (from where the command runs), and the variables the query names."""
    env = {"PYTHONPATH": "src" if root in ("", ".") else f"{root}/src"} if declared.src else {}
    env.update(asked.env)
    return "".join(f"{k}={shlex.quote(v)} " for k, v in env.items())


def recipes(
    declared: Declared | None = None, asked: Asked | None = None
) -> dict[str, tuple[tuple[str, int] | None, tuple[str, int], bool]]:
    """kind -> (build command and timeout or None, test command and timeout, whether the build always runs).

    What the project declares comes first: its `package.json` test script run by its package manager, its `src/`
    layout on the import path."""
    declared = declared or Declared()
    env = _python_env(declared, asked or Asked(), ".")
    node = filtered(declared.test_command(), _js_keep(declared)) if declared.test_script else None
    node = node or filtered("node --test", NODE_KEEP)
    return {
        "python": (("python3 -m compileall -q .", 60_000), (f"{env}python3 -m pytest -q 2>&1", 120_000), False),
        "node": (None, (node, 120_000), False),
        "cmake": (
            (f"cmake -S . -B build >/dev/null && {logged('cmake --build build')}", 180_000),
            ("ctest --test-dir build --output-on-failure 2>&1", 120_000),
            True,
        ),
        "rust": (
            ("cargo build --offline 2>&1", 180_000),
            # one test thread: with cargo's parallel threads the failures (and the first panic) print in a different
            # order each run, and the expert's summary, which names them in order, with them
            (filtered("cargo test --offline --no-fail-fast -- --test-threads=1", CARGO_KEEP), 180_000),
            True,
        ),
        "go": (("go build ./... 2>&1", 120_000), (filtered("go test -v ./...", GO_KEEP), 120_000), True),
        "make": ((logged("make"), 180_000), ("make test 2>&1", 180_000), True),
    }


def _run_part(command: str) -> str:
    """A recipe command as a user would type it: no log redirection, no `>/dev/null`, python as python3."""
    command = shown(command).removesuffix("  (full log kept in the sandbox, filtered)")
    command = re.sub(r"\s*2>&1", "", command).replace(">/dev/null", "")
    return " ".join(re.sub(r"\bpython(?!3)\b", "python3", command).split())


def _refines(recipe: str, named: str) -> bool:
    """Whether the recipe's run is the named command plus flags of its own (`cargo test --offline` is refined by
    `cargo test --offline --no-fail-fast -- --test-threads=1`, which keeps its output order fixed): then the recipe,
    with its filtering and fixed order, runs what was asked."""
    asked = re.sub(r"\bpython(?!3)\b", "python3", named.replace("2>&1", "")).split()
    ours = recipe.split()
    return asked[:2] == ours[:2] and all(ours.count(word) >= asked.count(word) for word in asked)


def _program(command: str) -> str | None:
    """The program a command line runs, after `cd X &&` and VAR=value assignments."""
    words = re.sub(r"^cd \S+ && ", "", command).split()
    while words and re.match(r"^[A-Za-z_]\w*=", words[0]):
        words.pop(0)
    if words[:3] in (["python3", "-m", "pytest"], ["python", "-m", "pytest"]):
        return words[0]
    return words[0] if words else None


def scoped(kind: str, asked: Asked, declared: Declared | None = None, root: str = ".") -> tuple[str, int] | None:
    """The test (or build) run narrowed to what the query names: files, ids, test names, a keyword, a target."""
    declared = declared or Declared()
    quoted = " ".join(shlex.quote(t) for t in asked.tests)
    keyword = shlex.quote(asked.keyword) if asked.keyword else ""
    idents = [n for n in asked.names if re.fullmatch(r"[\w:/]+", n)]  # a quoted title filters JavaScript runners only
    if not keyword and idents and kind == "python":
        keyword = shlex.quote(" or ".join(idents))
    if asked.target:
        build = {"cmake": f"cmake --build build --target {shlex.quote(asked.target)}", "make": f"make {asked.target}"}
        if kind in build:
            prefix = "cmake -S . -B build >/dev/null && " if kind == "cmake" else ""
            return f"{prefix}{logged(build[kind])}", 180_000
        return None
    if kind == "python" and (quoted or keyword):
        env = _python_env(declared, asked, root)
        args = " ".join(filter(None, [quoted, f"-k {keyword}" if keyword else ""]))
        return f"{env}python3 -m pytest -q {args} 2>&1", 120_000
    named = idents[0] if idents else ""
    name = keyword or shlex.quote(named) or (shlex.quote(asked.tests[0].split("::")[-1]) if asked.tests else "")
    title = asked.names[0] if asked.names else ""
    if kind == "node" and declared.test_script and (asked.tests or title):
        narrow = node_filter(declared.test_script, title) if title else ""
        return filtered(declared.test_command(" ".join(filter(None, [quoted, narrow]))), _js_keep(declared)), 120_000
    if kind == "node" and asked.tests:
        return filtered(f"node --test {quoted}", NODE_KEEP), 120_000
    if kind == "rust" and name:
        return filtered(f"cargo test --offline --no-fail-fast {name} -- --test-threads=1", CARGO_KEEP), 180_000
    if kind == "go" and idents and not keyword:
        return filtered(f"go test -v -run {go_run_pattern(idents)} ./...", GO_KEEP), 120_000
    if kind == "go" and name:
        return filtered(f"go test -v -run {name} ./...", GO_KEEP), 120_000
    if kind == "cmake" and name:
        return f"ctest --test-dir build -R {name} --output-on-failure 2>&1", 120_000
    return None


def plan(kind: str | None, root: str, query: str, declared: Declared | None = None) -> list[tuple[str, int]]:
    """The commands for a project kind and a query, with their timeouts in ms: what the query asks for (a command it
    names, its tests, a target), else the kind's build and tests as the query's words ask and the project declares."""
    steps = _plan(kind, root, query, declared or Declared(root=root))
    return [(with_toolchain(command, _program(command) or KIND_PROGRAM.get(kind)), t) for command, t in steps]


def _plan(kind: str | None, root: str, query: str, declared: Declared) -> list[tuple[str, int]]:
    asked = read_query(query)
    if kind is None and asked.tests:  # no build file found: the named tests say which toolchain runs them
        suffix = asked.tests[0].split("::")[0]
        kind = "python" if suffix.endswith(".py") else "go" if suffix.endswith("_test.go") else "node"
    build, test, build_always = recipes(declared, asked)[kind] if kind else (None, None, False)
    if kind == "node" and asked.command and _refines("node --test", asked.command):
        test = recipes()["node"][1]  # `node --test` named: node:test's own filtered run, not the script
    usual = bool(asked.command) and any(step and _refines(_run_part(step[0]), asked.command) for step in (build, test))
    if asked.command and not usual:
        # Not the toolchain's usual run: exactly what was asked, where the main agent stands (the root).
        redirect = "" if "2>&1" in asked.command else " 2>&1"
        return [(asked.command + redirect, (test or build or ("", 120_000))[1])]
    if kind is None:
        return []
    if asked.names_anything and not asked.command and (narrowed := scoped(kind, asked, declared, root)):
        if asked.target or kind == "python":  # named from the repository root, as the main agent sees it
            return [narrowed]
        test = narrowed
    cd = "" if root in ("", ".") else f"cd {root} && "
    wants_build = bool(BUILD_WORDS.search(query))
    wants_tests = bool(TEST_WORDS.search(query)) and not NO_TEST.search(query)
    if not wants_build and not wants_tests:
        wants_tests = True  # "what is wrong", "diagnose the error": running the tests shows it
    steps: list[tuple[str, int]] = []
    if build and (build_always or not wants_tests):
        steps.append(build)
    if wants_tests or build is None:  # projects without a build step answer a build request with their tests
        steps.append(test)  # scoped to the files or ids the query names, where it names any
    # The terminal keeps the working directory between commands: change into the project once.
    return [((cd if i == 0 else "") + command, timeout) for i, (command, timeout) in enumerate(steps)]


def pick_project(listing: str) -> tuple[str, str] | None:
    """(kind, root) of the shallowest recognised build file; ties by MARKERS priority."""
    best = None
    for line in listing.splitlines():
        path = PurePosixPath(line.strip())
        if path.name not in MARKERS:
            continue
        kind, priority = MARKERS[path.name]
        key = (len(path.parts), priority)
        if best is None or key < best[0]:
            best = (key, kind, str(path.parent))
    return (best[1], best[2]) if best else None


# -- summaries ---------------------------------------------------------------------------------------------
_ABSOLUTE_WORKSPACE = re.compile(r"(?:file://)?(?:/[\w.-]+)*/workspace/")


def summarise(kind: str, command: str, observation: str, declared: Declared | None = None) -> str:
    """Facts from one command's output, in one or two sentences: its runner's, a missing dependency, the exit code."""
    declared = declared or Declared()
    status = read_status(observation)
    if status.timed_out:
        return "Timed out before finishing; results are incomplete."
    text = _ABSOLUTE_WORKSPACE.sub("", observation)  # paths relative to the repository, as the main agent sees it
    facts = runner_for(without_toolchain(command)).parse(command, text, status.exit_code)
    if missing := missing_fact(kind, text, declared):
        facts.append(missing)
    if ran := toolchain_fact(text):
        facts.append(ran)
    facts.append(f"exit code {status.exit_code}")
    return "; ".join(facts) + "."


class ScriptedPolicy:
    """Deterministic: the same conversation always gets the same reply."""

    name = "scripted"

    def respond(self, messages: list[dict], tools: list[dict], tool_choice: str | None = None) -> dict:
        query = next(m["content"] for m in messages if m["role"] == "user")
        done = _executed(messages)  # [(command, observation)]
        answer_now = not tools or tool_choice == "none"  # the loop's ANSWER_NOW: the last or a forced turn
        if not done:
            if answer_now:
                return _answer([])
            return _call(DISCOVER, 30_000)
        project = pick_project(done[0][1])
        kind, root = project or (None, ".")
        manifest = f"cat {root}/package.json" if root not in ("", ".") else "cat package.json"
        if kind == "node" and not answer_now and all(c != manifest for c, _ in done):
            return _call(manifest, 10_000)  # its test script says how the project is tested
        read = next((obs for c, obs in done if c == manifest), None) if kind == "node" else None
        declared = Declared(done[0][1], root, read)
        steps = plan(kind, root, query, declared)
        issued = {command for command, _ in done}
        remaining = [s for s in steps if s[0] not in issued]
        stop = answer_now or not remaining or _build_failed(done)
        if not stop:
            return _call(*remaining[0])
        kind = project[0] if project else "unknown"
        entries = []
        for command, obs in done:
            if command == DISCOVER:
                where = "the repository root" if project and project[1] == "." else project and f"{project[1]}/"
                summary = f"Found a {kind} project at {where}." if project else "No recognised build files found."
                if declared.src and kind == "python":
                    summary = summary[:-1] + f"; src layout ({', '.join(declared.src)} under src/)."
            elif command == manifest:
                script = f"`{declared.test_script}`" if declared.test_script else "none (node --test runs the tests)"
                status = read_status(obs).exit_code
                summary = f"test script: {script}; package manager: {declared.pm}; exit code {status}."
            else:
                summary = summarise(kind, command, obs, declared)
            entries.append({"command": shown(command), "summary": summary})
        return _answer(entries)


def _build_failed(done: list[tuple[str, str]]) -> bool:
    """Stop after a failed build: its tests cannot run, and the build error is the answer."""
    command, obs = done[-1]
    is_build = any(k in command for k in ("cmake --build", "cargo build", "go build", "build.log"))
    return is_build and read_status(obs).exit_code not in (0, None)


def _executed(messages: list[dict]) -> list[tuple[str, str]]:
    pairs, pending = [], None
    for message in messages:
        if message["role"] == "assistant":
            pending = None
            for call in message.get("tool_calls") or []:
                args = call["function"]["arguments"]
                pending = (json.loads(args) if isinstance(args, str) else args).get("command")
        elif message["role"] == "tool" and pending is not None:
            pairs.append((pending, message["content"]))
            pending = None
    return pairs


def _call(command: str, timeout_ms: int) -> dict:
    arguments = json.dumps({"command": command, "timeout_ms": timeout_ms})
    return {
        "content": "",
        "tool_calls": [
            {
                "id": "call_" + hashlib.sha1(command.encode()).hexdigest()[:12],
                "type": "function",
                "function": {"name": TOOL_NAME, "arguments": arguments},
            }
        ],
    }


def _answer(entries: list[dict[str, str]]) -> dict:
    pairs = "\n".join(f"Command: {e['command']}\nSummary: {e['summary']}" for e in entries)
    return {"content": f"<final_answer>\n{pairs}\n</final_answer>"}
