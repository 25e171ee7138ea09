"""The commands an episode ran, each with what it printed and how it exited, and which of them a final answer's
`Command:` names.

A claim is grounded in the output of the command its pair names, so the fact checker needs the runs apart, not one
joined log. A `Command:` is matched to a run by what it runs, not character for character: the scripted expert names
a filtered run by its run alone (`cargo test --offline  (full log kept in the sandbox, filtered)` for a command line
that also writes a log, greps it and prints the toolchain), and a model may write `pytest -q` for
`python3 -m pytest -q 2>&1`.
"""

from __future__ import annotations

import json
import re
import shlex
from dataclasses import dataclass

from terminus.agent.parsing import FormatError, parse_tool_calls
from terminus.models.toolchains import read_status


@dataclass(frozen=True)
class Run:
    command: str | None  # None: not known (observations given as one text)
    output: str
    exit_code: int | None  # None: killed, or no status line


class Observed(str):
    """What the commands printed, joined as one text (as callers have always used it), with each run kept apart."""

    runs: tuple[Run, ...]

    def __new__(cls, runs: list[Run]) -> Observed:
        text = super().__new__(cls, "\n".join(r.output for r in runs))
        text.runs = tuple(runs)
        return text


def runs_of(observations: str) -> tuple[Run, ...]:
    """The runs behind `observations`: kept apart by `observations_of`, else one run of an unknown command."""
    runs = getattr(observations, "runs", None)
    if runs is not None:
        return runs
    return (Run(None, observations, _exit_code(observations)),) if observations else ()


def observations_of(messages: list[dict]) -> Observed:
    """Each tool output with the command that printed it (from the assistant's tool call before it)."""
    runs, pending = [], []
    for message in messages:
        if message.get("role") == "assistant":
            pending = [_command_of(call.arguments) for call in _calls(message)]
        elif message.get("role") == "tool":
            output = message.get("content") or ""
            # an output after no call (a malformed record) rests on a command no answer can name
            runs.append(Run(pending.pop(0) if pending else "", output, _exit_code(output)))
    return Observed(runs)


def _calls(message: dict) -> list:
    try:
        return parse_tool_calls(message)
    except FormatError:
        return []


def _command_of(arguments: object) -> str:
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments)
        except json.JSONDecodeError:
            return arguments
    if isinstance(arguments, dict):
        return str(arguments.get("command") or "")
    return str(arguments)


def _exit_code(output: str) -> int | None:
    return read_status(output).exit_code if output.strip() else None


# -- what a command line runs ---------------------------------------------------------------------------------------
_SEPARATORS = {";", "&&", "||", "|", "&", "|&", ";;"}
_KEYWORDS = {"if", "then", "else", "elif", "fi", "do", "done", "while", "until", "for", "!", "{", "}", "(", ")"}
_PREFIXES = {"time", "sudo", "env", "command", "exec", "nice", "nohup"}
# The expert's note after a filtered run's command, or any closing remark in words: not part of what runs.
_NOTE = re.compile(r"\s+\([^()$;&|<>`]*\s[^()$;&|<>`]*\)\s*$")
_FD = re.compile(r"(?<![\w$])\d(?=>|<)")  # the 2 of 2>&1


def segments(command: str) -> list[tuple[str, ...]]:
    """The simple commands of a command line, each as its words without redirections, env assignments or wrappers;
    `python3 -m pytest` as `pytest`. `cd` segments are kept (first word "cd")."""
    text = _FD.sub("", _NOTE.sub("", command.strip()))
    try:
        lexer = shlex.shlex(text, posix=True, punctuation_chars=True)
        lexer.whitespace_split = True
        tokens = list(lexer)
    except ValueError:  # an unbalanced quote: words as they stand
        tokens = text.split()
    out: list[tuple[str, ...]] = []
    words: list[str] = []
    skip = False
    for token in [*tokens, ";"]:
        if skip:
            skip = False
            continue
        if token in _SEPARATORS:
            simple = _simple(words)
            if simple[:1] in (("bash",), ("sh",)) and len(simple) == 3 and simple[1] in ("-c", "-lc"):
                out += segments(simple[2])  # `bash -lc "pytest -q"` runs pytest
            elif simple:
                out.append(simple)
            words = []
        elif set(token) <= set("<>&|;") and ("<" in token or ">" in token):
            skip = True  # a redirection and its target
        else:
            words.append(token)
    return out


def _simple(words: list[str]) -> tuple[str, ...]:
    while words and (words[0] in _KEYWORDS or words[0] in _PREFIXES or re.match(r"^[A-Za-z_]\w*=", words[0])):
        words = words[1:]
    if words[:1] in (["python"], ["python3"]) and len(words) > 2 and words[1] == "-m":
        words = words[2:]
    if words[:1] == ["npx"]:
        words = words[1:]
    if words[:1] == ["exit"]:
        return ()
    return tuple(re.sub(r"^python$", "python3", w) for w in words)


def _core(segs: list[tuple[str, ...]]) -> list[tuple[str, ...]]:
    return [s for s in segs if s[0] != "cd"]


def _same(named: tuple[str, ...], ran: tuple[str, ...]) -> bool:
    """One simple command named for another: the same program, one's words within the other's (flags added or left
    out: `pytest -q` for `pytest -q -x`, `go test ./...` for `go test -v ./...`; not `cargo test` for `cargo build`)"""
    return named[0] == ran[0] and (set(named) <= set(ran) or set(ran) <= set(named))


def names(command: str, ran: str | None) -> bool:
    """Whether an answer's `Command:` names the run of `ran`: each simple command it names runs there, in order. A
    `cd` counts only in a command that does nothing else (the terminal keeps the directory between commands)."""
    if ran is None:
        return True  # observations given as one text: the command that printed them is not known
    named, done = segments(command), segments(ran)
    if _core(named):
        named, done = _core(named), _core(done)
    if not named:
        return False
    i = 0
    for simple in done:
        if i < len(named) and _same(named[i], simple):
            i += 1
    return i == len(named)


def runs_named(command: str, runs: tuple[Run, ...]) -> tuple[Run, ...]:
    """The runs an answer's pair rests on: those its `Command:` names; all of them when it names none."""
    if not command.strip():
        return runs
    return tuple(r for r in runs if names(command, r.command))


# -- builds and test runs -------------------------------------------------------------------------------------------
_BUILD = re.compile(
    r"^(?:make|gmake|ninja|cmake --build|meson compile|cargo (?:build|check|test|run|b|t)|rustc|go (?:build|test|vet|"
    r"install)|gcc|g\+\+|cc|c\+\+|clang|clang\+\+|javac|tsc|mvn|gradle|\./gradlew|dotnet build|bazel build|"
    r"(?:npm|yarn|pnpm) (?:run )?build|compileall|py_compile)\b"
)
_TESTS = re.compile(
    r"^(?:pytest|py\.test|unittest|tox|nox|ctest|cargo (?:test|t|nextest)|go test|(?:npm|yarn|pnpm) (?:run )?test|"
    r"node --test|jest|vitest|mocha|make (?:test|check)|mvn test|gradle test|\./gradlew test|dotnet test)\b"
)


def _matches(pattern: re.Pattern, command: str | None) -> bool:
    if command is None:
        return False
    return any(pattern.match(" ".join(s)) and not {"--help", "-h", "--version"} & set(s) for s in segments(command))


def is_build(run: Run) -> bool:
    """A run that compiles (an `ls` exiting 0 builds nothing); `--help` and `--version` runs build nothing either."""
    return _matches(_BUILD, run.command)


def is_runner(run: Run) -> bool:
    """A build or a test run that completed: its silence about warnings or failures states that there were none."""
    return run.exit_code is not None and (_matches(_BUILD, run.command) or _matches(_TESTS, run.command))
