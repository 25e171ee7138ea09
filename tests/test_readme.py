"""The README and the docs/ pages cannot drift from the code: every shell block is marked with where it runs
(tests/readme.py), the local ones run here (the long or interactive ones as their dry run), and every block's
commands name what exists: `terminus` subcommands and options, make targets, Snakemake profiles and rules, the
repository's files. Every relative link between the pages names a file of the repository, and none leaves it."""

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

from readme import MARKERS, PAGES, README, ROOT, SHELL, Block, all_blocks, blocks, indented_code, page_name
from terminus.cli import app

OPERATORS = {"&&", "||", "|", ";", "&", "(", ")"}
REDIRECTS = {">", ">>", "<", "2>", "&>"}
PLACEHOLDER = re.compile(r"[<>{}*$\[\]]")
TOP = {p.name for p in ROOT.iterdir() if not p.name.startswith(".")} - {"results"}
MAKE_TARGETS = set(re.findall(r"^([\w-]+):", (ROOT / "Makefile").read_text(), re.M))
RULES = {
    m for f in (ROOT / "workflow" / "rules").glob("*.smk") for m in re.findall(r"^rule (\w+):", f.read_text(), re.M)
}


PAGE_IDS = [page_name(p) for p in PAGES]


def shell_blocks(text: str | None = None, page: Path = README) -> list[Block]:
    return [b for b in blocks(text, page) if b.language in SHELL]


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


def format_problems(text: str | None = None, page: Path = README) -> list[str]:
    """Indented code blocks, fences without a language, shell blocks without a known marker."""
    name = page_name(page)
    found = [f"{name}:{n}: an indented code block: fence it with its language" for n in indented_code(text, page)]
    found += [f"{b.where}: a fence without a language" for b in blocks(text, page) if not b.language]
    found += [
        f"{b.where}: a shell block marked {b.marker!r}, not one of {sorted(MARKERS)}"
        for b in shell_blocks(text, page)
        if b.marker not in MARKERS
    ]
    return found


# -- links between the pages --------------------------------------------------------------------------------------
LINK = re.compile(r"!?\[[^\]\n]*\]\(\s*<?([^)>\s]*)>?(?:\s+\"[^\"]*\")?\s*\)")
REFERENCE = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s.*)?$", re.M)
AUTOLINK = re.compile(r"<([a-z][a-z0-9+.-]*:[^>\s]*)>", re.I)


def link_problems(text: str | None = None, page: Path = README) -> list[str]:
    """Every link of a page (inline, reference or autolink; code aside) is a relative path, without an anchor, to a
    file or folder of the repository: an anchor goes stale when a heading is reworded, and a page that sends the
    reader outside the repository sends them where this repository cannot check."""
    name = page_name(page)
    prose = re.sub(r"```.*?```|`[^`\n]*`", "", page.read_text() if text is None else text, flags=re.S)
    found = []
    for target in [*LINK.findall(prose), *REFERENCE.findall(prose), *AUTOLINK.findall(prose)]:
        if re.match(r"[a-z][a-z0-9+.-]*:", target, re.I) or target.startswith("//"):
            found.append(f"{name}: {target!r} leaves the repository")
        elif "#" in target or not target:
            found.append(f"{name}: {target!r} has an anchor (link the page; name the section in words)")
        else:
            path = (page.parent / target).resolve()
            if not path.is_relative_to(ROOT):
                found.append(f"{name}: {target!r} leaves the repository")
            elif not path.exists():
                found.append(f"{name}: {target!r} does not exist")
    return found


# -- the tests ------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("page", PAGES, ids=PAGE_IDS)
def test_every_code_block_is_fenced_with_its_language_and_every_shell_block_is_marked(page):
    assert format_problems(page=page) == []


def test_the_pages_use_every_marker_and_the_readme_opens_on_its_two_commands():
    """The first block of the README is the two commands (set up and run the smoke job; set up and test), and the
    second is the one .ci/run ends on."""
    assert {b.marker for b in all_blocks() if b.language in SHELL} == MARKERS
    first = blocks()[0]
    assert first.marker == "local, dry-run"
    assert [argv[:2] for argv in commands(first.body)] == [["make", "demo"], ["make", "test"]]
    assert (ROOT / ".ci" / "run").read_text().rstrip().splitlines()[-1] == "make test"


@pytest.mark.parametrize("page", PAGES, ids=PAGE_IDS)
def test_every_shell_block_names_what_exists(page):
    assert [p for b in shell_blocks(page=page) for p in problems(b)] == []


@pytest.mark.parametrize("page", PAGES, ids=PAGE_IDS)
def test_local_blocks_run(page, tmp_path):
    """In page order (a block may use what an earlier one of its page set up), in the repository, with a scratch
    home of the page's own."""
    env = isolated_env(tmp_path)
    for block in [b for b in shell_blocks(page=page) if b.marker.startswith("local")]:
        problem = run(block, env)  # (not inside the assert: pytest would print the environment)
        assert problem is None, problem


def test_local_blocks_exist():
    assert len([b for b in all_blocks() if b.language in SHELL and b.marker.startswith("local")]) >= 3


@pytest.mark.parametrize("page", PAGES, ids=PAGE_IDS)
def test_links_between_the_pages_resolve(page):
    assert link_problems(page=page) == []


def test_the_readme_fits_a_first_hour_and_links_every_page():
    """At most 200 lines, with one table (today's results; the rest are on the docs/ pages), and a link to each
    page under docs/, so that no page is reachable only by listing the folder."""
    text = README.read_text()
    assert len(text.splitlines()) <= 200
    assert len(re.findall(r"^\|[-| :]+\|$", text, re.M)) == 1
    assert {f"docs/{p.name}" for p in PAGES[1:]} <= set(LINK.findall(text))


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


def test_the_link_check_catches_broken_and_outside_links():
    page = ROOT / "docs" / "x.md"  # a page in docs/: its links resolve from there
    text = """[ok](use.md) [up](../README.md) ![img](../results/benchmarks/view.png) `[code](nowhere.md)`
[gone](nowhere.md) [anchored](use.md#sandboxes) [web](https://example.com) <https://example.com/x>
[out](../../etc/passwd) [mail](mailto:a@b.c)

[ref]: https://example.com
```sh
echo [in a block](nowhere.md)
```
"""
    assert [p.split(": ", 1)[1] for p in link_problems(text, page)] == [
        "'nowhere.md' does not exist",
        "'use.md#sandboxes' has an anchor (link the page; name the section in words)",
        "'https://example.com' leaves the repository",
        "'../../etc/passwd' leaves the repository",
        "'mailto:a@b.c' leaves the repository",
        "'https://example.com' leaves the repository",
        "'https://example.com/x' leaves the repository",
    ]


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
