"""The code blocks of the README and of every page under docs/, as tests/test_readme.py and tests/test_hosting.py
read them.

Every code block is fenced with its language. A shell block (```sh) carries a marker on the line before its
fence that says where it runs:

    <!-- local -->            runs here as written, quickly and offline: the tests run it
    <!-- local, dry-run -->   runs here but is long or interactive (make demo, make lab): the tests run its dry-run
                              form (make -n, snakemake -n)
    <!-- external -->         needs what the reader brings (a trained model or a served one, an API key, a
                              coding agent's CLI, a dataset): not run, its commands are checked against the code
    <!-- cluster -->          needs the GPU cluster (conda, slurm, GPUs, images built there): not run, checked
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
# every page a reader is sent to: the README first, then docs/ (a new page there is checked without a change here)
PAGES = (README, *sorted((ROOT / "docs").glob("*.md")))
SHELL = {"sh", "bash", "shell"}
MARKERS = {"local", "local, dry-run", "external", "cluster"}
FENCE = re.compile(r"^```(\S*)\s*$")
MARKER = re.compile(r"^<!--\s*(.*?)\s*-->$")


@dataclass
class Block:
    language: str
    marker: str | None  # the HTML comment on the line before the fence, if any
    body: str
    line: int  # of the opening fence, 1-based
    page: str = "README.md"  # relative to the repository

    @property
    def where(self) -> str:
        return f"{self.page}:{self.line}"


def page_name(path: Path) -> str:
    return str(path.relative_to(ROOT))


def blocks(text: str | None = None, page: Path = README) -> list[Block]:
    """The fenced blocks of `page`, or of `text` (then named as `page`)."""
    name = page_name(page)
    lines = (page.read_text() if text is None else text).splitlines()
    found, i = [], 0
    while i < len(lines):
        opening = FENCE.match(lines[i])
        if not opening:
            i += 1
            continue
        end = next((j for j in range(i + 1, len(lines)) if lines[j].rstrip() == "```"), None)
        if end is None:
            raise ValueError(f"{name}:{i + 1}: a fence that is never closed")
        before = MARKER.match(lines[i - 1].strip()) if i else None
        marker = before.group(1) if before else None
        found.append(Block(opening.group(1), marker, "\n".join(lines[i + 1 : end]), i + 1, name))
        i = end + 1
    return found


def all_blocks() -> list[Block]:
    """Every page's blocks, the README's first."""
    return [b for page in PAGES for b in blocks(page=page)]


def indented_code(text: str | None = None, page: Path = README) -> list[int]:
    """1-based lines that start an indented (language-less) code block outside the fences."""
    lines = (page.read_text() if text is None else text).splitlines()
    starts, fenced = [], False
    for i, line in enumerate(lines):
        if FENCE.match(line):
            fenced = not fenced
            continue
        if not fenced and line.startswith("    ") and line.strip() and (i == 0 or not lines[i - 1].strip()):
            starts.append(i + 1)
    return starts
