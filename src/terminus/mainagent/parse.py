"""What the `reader` main agent knows how to read: generic text parsing, no task facts.

Everything here takes text a coding agent has in its context (a directory listing, a subagent's answer, raw
terminal output, a file it read) and returns what such an agent would take from it: the project and its test
command, `path:line` locations of failures, whether a test run passed, the function a failing test calls, where
that function is defined, and the operator edits worth trying on a suspect line.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from pathlib import PurePosixPath

from terminus.mainagent.brains import RAW_TESTS

# Build file -> project kind; the shallowest marker is the project root (nested projects live in a subfolder).
MARKERS = {
    "Cargo.toml": "rust",
    "go.mod": "go",
    "CMakeLists.txt": "cmake",
    "package.json": "node",
    "pyproject.toml": "python",
    "setup.py": "python",
    "setup.cfg": "python",
}
SOURCE_EXT = {
    "python": (".py",),
    "node": (".js", ".mjs", ".cjs", ".ts"),
    "cmake": (".c", ".cc", ".cpp", ".h"),
    "rust": (".rs",),
    "go": (".go",),
}
LOCATION = re.compile(r"((?:[\w.@+-]+/)*[\w.@+-]+\.(?:py|js|mjs|cjs|ts|c|cc|cpp|h|rs|go)):(\d+)")
FAILURE_CUE = re.compile(r"fail|error|assert|panick|\bwant\b|expected|\bat\b", re.I)
EXIT_CODE = re.compile(r"exit code (-?\d+)", re.I)
FAILED_COUNT = re.compile(r"\b(\d+) (?:failed|failures?|failing)\b", re.I)
CALL = re.compile(r"(?<![\w.$])([A-Za-z_]\w*)\s*\(")
# Names around a failing assertion that are the test framework's, not the code under test.
NOT_UNDER_TEST = {
    "assert",
    "assertEqual",
    "assertTrue",
    "assertFalse",
    "strictEqual",
    "deepStrictEqual",
    "equal",
    "expect",
    "test",
    "it",
    "describe",
    "CHECK",
    "REQUIRE",
    "EXPECT_EQ",
    "ASSERT_EQ",
    "ASSERT",
    "printf",
    "fprintf",
    "if",
    "for",
    "while",
    "return",
    "sizeof",
    "switch",
    "func",
    "fn",
    "def",
    "function",
    "main",
    "Errorf",
    "Fatalf",
    "Sprintf",
    "Run",
    "len",
    "int",
    "str",
    "float",
    "abs",
    "round",
    "approx",
    "require",
    "check",
}
# A binary operator between two operands: the kind of one-token fault an agent looks for on a suspect line.
OPERATOR = re.compile(r"(?<=[\w)\]])\s*(<=|>=|==|!=|<|>|\+|-|\*)\s*(?=[\w(\[])")
ALTERNATIVES = {
    "+": ("-", "*"),
    "-": ("+", "*"),
    "*": ("+", "-"),
    "<": ("<=",),
    "<=": ("<",),
    ">": (">=",),
    ">=": (">",),
    "==": ("!=",),
    "!=": ("==",),
}


@dataclass(frozen=True)
class Project:
    root: str  # "." or a folder relative to the repository
    kind: str

    def test_command(self) -> str:
        command = RAW_TESTS[self.kind]  # in a subshell: the terminal keeps its working directory between calls
        return command if self.root == "." else f"(cd {shlex.quote(self.root)} && {command})"


@dataclass(frozen=True)
class Edit:
    path: str
    line: int  # 1-based
    old: str
    new: str


def failures_only(command: str) -> str:
    """A test run filtered to the lines around its failures, as one reruns a suite whose log was too long."""
    cues = "not ok|FAIL|Error|error|panicked|assert|want"
    return f"{command} 2>&1 | grep -E -A25 '{cues}' | head -300"


def listing_files(listing: str) -> list[str]:
    """The file paths of a directory listing as the read tool prints it (one path a line, folders end in /)."""
    return [line.strip() for line in listing.splitlines() if line.strip() and not line.strip().endswith("/")]


def detect_project(files: list[str]) -> Project | None:
    """The shallowest build file names the project; None when the listing shows none."""
    found = []
    for path in files:
        p = PurePosixPath(path)
        if p.name in MARKERS and not any(part in ("node_modules", "vendor", "target") for part in p.parts):
            found.append((len(p.parts), path, MARKERS[p.name]))
    if not found:
        return None
    _, path, kind = min(found)
    parent = str(PurePosixPath(path).parent)
    return Project(parent if parent else ".", kind)


def repository_file(path: str, files: list[str], prefer: str = ".") -> str | None:
    """The repository file a reported path means: as given, else the longest matching suffix (a runner reports
    paths relative to the project root or as absolute paths inside its sandbox)."""
    parts = PurePosixPath(path).parts
    for k in range(len(parts)):
        tail = "/".join(parts[k:])
        hits = [f for f in files if f == tail or f.endswith("/" + tail)]
        if hits:
            inside = [f for f in hits if prefer == "." or f.startswith(prefer.rstrip("/") + "/")]
            return sorted(inside or hits, key=len)[0]
    return None


def locations(text: str, files: list[str], prefer: str = ".") -> list[tuple[str, int]]:
    """Every `path:line` in the text that names a repository file, without repeats: first those on a line that
    speaks of a failure (an assertion, a panic, an error, a wanted value), then the rest, each in order of
    appearance. Test logs print their own `file:line` on every line; the failure's line says what went wrong."""
    cued: list[tuple[str, int]] = []
    plain: list[tuple[str, int]] = []
    for text_line in text.splitlines():
        for match in LOCATION.finditer(text_line):
            path = repository_file(match.group(1), files, prefer)
            if path:
                where = (path, int(match.group(2)))
                (cued if FAILURE_CUE.search(text_line) else plain).append(where)
    out: list[tuple[str, int]] = []
    for where in cued + plain:
        if where not in out:
            out.append(where)
    return out


def passed(text: str) -> bool | None:
    """Whether a test run the text reports passed: True, False, or None when the text does not say."""
    codes = EXIT_CODE.findall(text)
    if codes:
        return int(codes[-1]) == 0
    counts = [int(n) for n in FAILED_COUNT.findall(text)]
    if counts:
        return max(counts) == 0
    if re.search(r"\ball (?:\d+ )?tests? pass", text, re.I):
        return True
    return None


def is_test_file(path: str) -> bool:
    name = PurePosixPath(path).name.lower()
    parts = [p.lower() for p in PurePosixPath(path).parts[:-1]]
    return "test" in name or "spec" in name or any(p in ("test", "tests", "__tests__") for p in parts)


def called_names(lines: list[str], line: int, before: int = 4) -> list[str]:
    """Functions called on a failing assertion's line, then on the lines just above it (where Go and C tests
    compute the value they check), nearest first."""
    names: list[str] = []
    for number in range(line, max(0, line - before - 1), -1):
        if 1 <= number <= len(lines):
            for name in CALL.findall(lines[number - 1]):
                if name not in NOT_UNDER_TEST and name not in names and not name.startswith("test"):
                    names.append(name)
    return names


def definition(name: str, lines: list[str]) -> int | None:
    """The 1-based line where `name` is defined (Python, JavaScript, Rust, Go or C), else None."""
    n = re.escape(name)
    pattern = re.compile(
        rf"^\s*(?:async\s+)?def\s+{n}\s*\(|\bfunction\s+{n}\s*\(|\bfn\s+{n}\s*[<(]|^func\s+(?:\([^)]*\)\s*)?{n}\s*\(|"
        rf"\b{n}\s*[:=]\s*(?:async\s+)?(?:function\b|\([^)]*\)\s*=>)|^[A-Za-z_][\w \t*]*\b{n}\s*\([^;]*$"
    )
    for number, text in enumerate(lines, 1):
        if pattern.search(text) and not text.lstrip().startswith(("//", "#", "*", "/*")):
            return number
    return None


def body(lines: list[str], start: int) -> range:
    """The 1-based lines of the function defined at `start`: by braces, or by indentation for Python."""
    head = lines[start - 1]
    if head.rstrip().endswith(":") and "{" not in head:
        indent = len(head) - len(head.lstrip())
        end = start
        for number in range(start + 1, len(lines) + 1):
            text = lines[number - 1]
            if text.strip() and len(text) - len(text.lstrip()) <= indent:
                break
            end = number
        return range(start + 1, end + 1) if end > start else range(start, start + 1)
    depth, opened = 0, False
    for number in range(start, len(lines) + 1):
        text = lines[number - 1]
        depth += text.count("{") - text.count("}")
        opened = opened or "{" in text
        if opened and depth <= 0:
            return range(start + 1, number) if number > start + 1 else range(start, number + 1)
    return range(start, start + 1)


def operator_edits(path: str, lines: list[str], numbers: range | list[int]) -> list[Edit]:
    """One-token operator changes on the given lines, in reading order: the edits worth trying when a line is
    suspected to compute the wrong value."""
    edits = []
    for number in numbers:
        text = lines[number - 1]
        stripped = text.strip()
        if not stripped or stripped.startswith(("#", "//", "/*", "*")):
            continue
        for match in OPERATOR.finditer(text):
            for alternative in ALTERNATIVES[match.group(1)]:
                new = text[: match.start(1)] + alternative + text[match.end(1) :]
                edits.append(Edit(path, number, text, new))
    return edits


def source_files(files: list[str], project: Project | None, near: str) -> list[str]:
    """The project's non-test source files, the ones whose names share words with `near` first."""
    kind = project.kind if project else None
    exts = SOURCE_EXT.get(kind, tuple(e for v in SOURCE_EXT.values() for e in v))
    root = "" if project is None or project.root == "." else project.root.rstrip("/") + "/"
    pool = [f for f in files if f.endswith(exts) and f.startswith(root) and not is_test_file(f)]
    words = set(re.findall(r"[a-z]+", PurePosixPath(near).stem.lower())) - {"test", "tests", "spec"}

    def score(f: str) -> tuple:
        shared = len(words & set(re.findall(r"[a-z]+", PurePosixPath(f).stem.lower())))
        return (f != near, -shared, len(PurePosixPath(f).parts), f)

    return sorted(set(pool) | ({near} if near.endswith(exts) and not is_test_file(near) else set()), key=score)
