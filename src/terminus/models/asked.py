"""What a main agent's query asks the subagent to run: a command it names, test files or test ids, a keyword, a
build target. The scripted expert runs what was asked and falls back to its own discovery only for what the
query leaves open (the paper's query forms: test execution naming a file, an id or a keyword; error diagnosis
naming a failing command; a build naming a target; a dependency check).

>>> a = read_query("Run `PYTHONPATH=src python -m pytest tests/test_io.py -x` and tell me why it fails.")
>>> a.command, a.env
('PYTHONPATH=src python -m pytest tests/test_io.py -x', {'PYTHONPATH': 'src'})
>>> read_query("Run tests/test_io.py::TestRead::test_empty[utf 8] and tests/test_cli.py only.").tests
['tests/test_io.py::TestRead::test_empty[utf 8]', 'tests/test_cli.py']
>>> read_query("Run the tests matching -k 'parse and not slow' please").keyword
'parse and not slow'
>>> read_query("Build the `server` target and report the errors.").target
'server'
>>> read_query("Run `node --check on the sources` and summarise.").command is None
True
>>> read_query("Why does TestVersion6 fail? And test_parse_empty?").names
['TestVersion6', 'test_parse_empty']
>>> read_query("Why does fnv_hash_standalone fail?").names, read_query("why does it fail?").names
(['fnv_hash_standalone'], [])
>>> read_query("Why does 'adds numbers' fail?").names
['adds numbers']
>>> read_query("Run tests/test_fields.py with PYTHONPATH=src and report.").env
{'PYTHONPATH': 'src'}
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field

# The programs a named command may start with (after VAR=value assignments): a backticked span that starts with
# another word is prose or a file name, not a command.
PROGRAMS = {
    "python", "python3", "pytest", "py.test", "tox", "nox", "uv", "poetry", "pip", "pip3",
    "node", "npm", "npx", "yarn", "pnpm", "jest", "mocha", "vitest",
    "cargo", "rustc", "go", "make", "cmake", "ctest", "ninja", "meson",
    "mvn", "gradle", "./gradlew", "./mvnw", "dotnet", "bash", "sh", "env", "cd", "./configure", "ls", "cat", "git",
}  # fmt: skip
# Words that mark a backticked span as a description ("node --check on the sources"), not a command line.
PROSE = {"the", "on", "all", "every", "each", "its", "sources"}
TEST_FILE = re.compile(
    r"(?<![\w/.-])((?:[\w.-]+/)*(?:test_[\w-]+\.py|[\w-]+_test\.py|[\w.-]+\.(?:test|spec)\.[cm]?[jt]s|[\w-]+_test\.go)"
    r"(?:::[\w.-]+(?:::[\w.-]+)*(?:\[[^\]\n]*\])?)?)"
)
KEYWORD = re.compile(r"-k\s+(?:'([^']+)'|\"([^\"]+)\"|(\S+))")
TARGET = re.compile(r"(?:--target\s+|\btarget\s+`?|`([\w.+-]+)`\s+target\b)([\w.+-]*)`?", re.I)
ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
# A test named by its function, not its file: Go's `TestX` (and `TestX/sub`), `test_x` in Python and Rust. A name
# inside a file id (`tests/a.py::test_x`, `test_x.py`) is the file's, not another name.
TEST_NAME = re.compile(r"(?<![\w/.:-])(Test[A-Z0-9_]\w*(?:/[\w-]+)?|test_\w+)(?![\w.])")
# "why does fnv_hash_standalone fail": a name in a question about one test (snake_case, CamelCase or a path, so
# that "why does it fail" names nothing).
WHY_NAME = re.compile(
    r"\b(?i:why (?:does|did|is) (?:the )?(?:test )?)`?((?:\w+::)*(?:[a-z]\w*_\w+|[A-Z][a-z0-9]+[A-Z]\w*))`?"
    r"(?: test)? (?:fail|break|panic|error)"
)
# "why does 'adds numbers' fail": a JavaScript test's title, quoted (jest, vitest and mocha filter by title)
WHY_TITLE = re.compile(
    r"\b(?i:why (?:does|did|is) (?:the )?(?:test )?)[\"'“‘]([^\"'”’\n]{2,80})[\"'”’](?: test)? (?i:fail)"
)
# `with PYTHONPATH=src` in prose: a variable the query wants set for the run.
PROSE_ENV = re.compile(r"(?<![\w`=])([A-Z][A-Z0-9_]*)=([^\s`'\",;]+)")


@dataclass
class Asked:
    command: str | None = None
    """A command line the query names (in backticks), as given."""
    env: dict[str, str] = field(default_factory=dict)
    """Variables the named command sets before its program (`PYTHONPATH=src pytest ...`)."""
    tests: list[str] = field(default_factory=list)
    """Test files or ids the query names (pytest node ids, `*.test.js`, `*_test.go`)."""
    names: list[str] = field(default_factory=list)
    """Test functions the query names without a file (`TestVersion6`, `test_parse`, a quoted title): run only them."""
    keyword: str | None = None
    """A `-k` expression."""
    target: str | None = None
    """A build target."""

    @property
    def names_anything(self) -> bool:
        return bool(self.command or self.tests or self.names or self.keyword or self.target)


def named_command(span: str) -> tuple[str, dict[str, str]] | None:
    """(the command, its leading assignments) when a backticked span is a command line, else None."""
    try:
        words = shlex.split(span)
    except ValueError:
        return None
    env = {}
    while words and ASSIGNMENT.match(words[0]):
        name, _, value = words.pop(0).partition("=")
        env[name] = value
    program = words[0] if words else ""
    if not (program in PROGRAMS or program.startswith("./")) or PROSE & {w.lower() for w in words[1:]}:
        return None
    return span.strip(), env


def read_query(query: str) -> Asked:
    asked = Asked()
    for span in re.findall(r"`([^`\n]+)`", query):
        found = named_command(span)
        if found:
            asked.command, asked.env = found
            break
    if asked.command is None:
        asked.tests = list(dict.fromkeys(m.group(1) for m in TEST_FILE.finditer(query)))
        named = [m.group(1) for m in TEST_NAME.finditer(query)] + WHY_NAME.findall(query) + WHY_TITLE.findall(query)
        asked.names = [n for n in dict.fromkeys(named) if not any(n in t for t in asked.tests)]
        asked.env = dict(PROSE_ENV.findall(query))
        keyword = KEYWORD.search(query)
        if keyword:
            asked.keyword = next(g for g in keyword.groups() if g)
        target = TARGET.search(query)
        if target and (target.group(1) or target.group(2)):
            asked.target = target.group(1) or target.group(2)
    return asked
