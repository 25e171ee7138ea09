"""The README cannot drift from the code: every shell block is marked with where it runs (tests/readme.py), the
local ones run here (the long or interactive ones as their dry run), and every block's commands name what exists:
`terminus` subcommands and options, make targets, Snakemake profiles and rules, the repository's files."""

from __future__ import annotations

import itertools
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
import typer.main

from readme import MARKERS, ROOT, SHELL, Block, blocks, indented_code
from terminus.cli import app

OPERATORS = {"&&", "||", "|", ";", "&", "(", ")"}
REDIRECTS = {">", ">>", "<", "2>", "&>"}
PLACEHOLDER = re.compile(r"[<>{}*$\[\]]")
TOP = {p.name for p in ROOT.iterdir() if not p.name.startswith(".")} - {"results"}
MAKE_TARGETS = set(re.findall(r"^([\w-]+):", (ROOT / "Makefile").read_text(), re.M))
RULES = {
    m for f in (ROOT / "workflow" / "rules").glob("*.smk") for m in re.findall(r"^rule (\w+):", f.read_text(), re.M)
}


def shell_blocks(text: str | None = None) -> list[Block]:
    return [b for b in blocks(text) if b.language in SHELL]


def commands(body: str) -> list[list[str]]:
    """The simple commands of a shell block: continuations joined, comments dropped, split at operators, with
    redirections and leading VAR=value assignments removed."""
    out = []
    for line in body.replace("\\\n", " ").splitlines():
        lexer = shlex.shlex(line, posix=True, punctuation_chars=";&|()<>")
        lexer.whitespace_split = True
        argv, skip = [], False
        for token in [*lexer, ";"]:
            if skip:
                skip = False
            elif token in OPERATORS:
                out.append(argv)
                argv = []
            elif token in REDIRECTS:
                skip = True
            elif argv or not re.match(r"^[A-Z_][A-Z0-9_]*=", token):
                argv.append(token)
    return [a for a in out if a]


# -- what a command names ---------------------------------------------------------------------------------------
def terminus_problems(argv: list[str]) -> list[str]:
    command, words = typer.main.get_command(app), argv[1:]
    path = ["terminus"]
    while words and getattr(command, "commands", None) and not words[0].startswith("-"):
        if words[0] not in command.commands:
            return [f"`{' '.join(path)}` has no subcommand {words[0]!r}"]
        command = command.commands[words[0]]
        path.append(words.pop(0))
    options = {"--help"} | {o for p in command.params for o in (*p.opts, *p.secondary_opts)}
    flags = [w.strip("[]").split("=")[0] for w in words if w.strip("[]").startswith("-")]
    return [f"`{' '.join(path)}` has no option {f}" for f in flags if f not in options]


def make_problems(argv: list[str]) -> list[str]:
    targets = [w for w in argv[1:] if not w.startswith("-") and "=" not in w]
    return [f"the Makefile has no target {t!r}" for t in targets if t not in MAKE_TARGETS]


def snakemake_problems(argv: list[str]) -> list[str]:
    found = []
    for flag, value in itertools.pairwise(argv):
        if flag == "--profile" and not (ROOT / "workflow" / "profiles" / value).is_dir():
            found.append(f"no profile workflow/profiles/{value}")
        if flag in ("-R", "--forcerun") and "/" not in value and value not in RULES:
            found.append(f"no rule {value!r} in workflow/rules/")
    return found


def path_problems(argv: list[str]) -> list[str]:
    """Words that name a file of the repository (configs/..., environment.yml, ...) name one that exists."""
    found = []
    for word in argv:
        for part in word.split("="):
            if PLACEHOLDER.search(part) or "://" in part:
                continue
            if part.split("/")[0] in TOP and not (ROOT / part).exists():
                found.append(f"{part} does not exist")
    return found


def problems(block: Block) -> list[str]:
    found = []
    for argv in commands(block.body):
        found += path_problems(argv)
        checks = {"terminus": terminus_problems, "make": make_problems, "snakemake": snakemake_problems}
        if argv[0] in checks:
            found += checks[argv[0]](argv)
    return [f"{block.where}: {p}" for p in found]


# -- how a local block runs --------------------------------------------------------------------------------------
def dry_run(block: Block) -> str:
    """The dry-run form of a long or interactive block: make -n, snakemake -n."""
    lines = []
    for argv in commands(block.body):
        if argv[0] == "make":
            lines.append(shlex.join(["make", "-n", *argv[1:]]))
        elif argv[0] == "snakemake":
            lines.append(shlex.join([*argv, *([] if "-n" in argv else ["-n"])]))
        else:
            raise AssertionError(f"{block.where}: no dry-run form for `{shlex.join(argv)}`; mark it local or external")
    return "\n".join(lines)


def script(block: Block) -> str:
    return dry_run(block) if block.marker == "local, dry-run" else block.body


def isolated_env(home: Path) -> dict[str, str]:
    """This venv first on PATH, and a scratch home: `make install-profiles` links into it, Jupyter writes there."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("XDG_", "JUPYTER_", "SNAKEMAKE_"))}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    for var, sub in {"HOME": "home", "XDG_CONFIG_HOME": "config", "JUPYTER_DATA_DIR": "jupyter"}.items():
        (home / sub).mkdir(parents=True, exist_ok=True)
        env[var] = str(home / sub)
    return env


def run(block: Block, env: dict[str, str]) -> str | None:
    """Run a local block in the repository; None, or what went wrong. It stops at its first failing command."""
    text = script(block)
    done = subprocess.run(
        ["bash", "-e", "-o", "pipefail", "-c", text], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300
    )
    if done.returncode:
        return f"{block.where} ({block.marker}) exited {done.returncode}:\n{text}\n{done.stderr[-3000:]}"
    return None


def format_problems(text: str | None = None) -> list[str]:
    """Indented code blocks, fences without a language, shell blocks without a known marker."""
    found = [f"README.md:{n}: an indented code block: fence it with its language" for n in indented_code(text)]
    found += [f"{b.where}: a fence without a language" for b in blocks(text) if not b.language]
    found += [
        f"{b.where}: a shell block marked {b.marker!r}, not one of {sorted(MARKERS)}"
        for b in shell_blocks(text)
        if b.marker not in MARKERS
    ]
    return found


# -- the tests ------------------------------------------------------------------------------------------------------
def test_every_code_block_is_fenced_with_its_language_and_every_shell_block_is_marked():
    assert format_problems() == []
    assert {b.marker for b in shell_blocks()} == MARKERS


def test_every_shell_block_names_what_exists():
    assert [p for b in shell_blocks() for p in problems(b)] == []


def test_local_blocks_run(tmp_path):
    """In README order (a block may use what an earlier one set up), in the repository, with a scratch home."""
    env = isolated_env(tmp_path)
    local = [b for b in shell_blocks() if b.marker.startswith("local")]
    assert len(local) >= 3
    for block in local:
        problem = run(block, env)  # (not inside the assert: pytest would print the environment)
        assert problem is None, problem


# -- the checks can fail ------------------------------------------------------------------------------------------
def test_the_checks_catch_drift():
    readme = """
<!-- local -->
```sh
terminus exec --repo examples/demo-project --no-such-flag x   # an option that does not exist
terminus no-such-command
make no-such-target && snakemake --profile nowhere -R no_such_rule
python scripts/no_such_script.py > out.txt
```

```sh
make demo
```

<!-- local, dry-run -->
```sh
terminus serve results/run/export
```

```
no language
```

    an indented block
"""
    first, _, dry = shell_blocks(readme)
    assert [p.split(": ", 1)[1] for p in problems(first)] == [
        "`terminus exec` has no option --no-such-flag",
        "`terminus` has no subcommand 'no-such-command'",
        "the Makefile has no target 'no-such-target'",
        "no profile workflow/profiles/nowhere",
        "no rule 'no_such_rule' in workflow/rules/",
        "scripts/no_such_script.py does not exist",
    ]
    assert [p.split(": ", 1)[1] for p in format_problems(readme)] == [
        "an indented code block: fence it with its language",
        "a fence without a language",
        f"a shell block marked None, not one of {sorted(MARKERS)}",
    ]
    with pytest.raises(AssertionError, match="no dry-run form for `terminus serve"):
        dry_run(dry)


def test_a_failing_local_block_fails(tmp_path):
    [block] = shell_blocks("<!-- local -->\n```sh\ntrue\nfalse   # the block stops here\ntouch ran\n```\n")
    assert "exited 1" in run(block, isolated_env(tmp_path))
    assert not (ROOT / "ran").exists()


def test_dry_run_forms():
    [block] = shell_blocks(
        "<!-- local, dry-run -->\n```sh\nmake lab RUN=results/smoke  # note\nsnakemake --profile local\n```"
    )
    assert dry_run(block) == "make -n lab RUN=results/smoke\nsnakemake --profile local -n"


def test_the_results_table_is_the_committed_tables():
    """The README's results table is what scripts/readme_results.py makes of results/cached/ and
    results/benchmarks/learning.json: refreshing the cached results without the README fails here."""
    done = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "readme_results.py"), "--check"], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stdout + done.stderr
