"""What a main agent submits: its changes to the repository as a unified diff (`git diff` style, a/ and b/)."""

from __future__ import annotations

import difflib
from pathlib import Path

# What a build or a test run leaves behind is not part of a submission.
GENERATED = {".git", "build", "target", "node_modules", "__pycache__", ".pytest_cache"}


def _files(root: Path) -> set[str]:
    return {
        p.relative_to(root).as_posix()
        for p in root.rglob("*")
        if p.is_file() and not p.is_symlink() and not GENERATED & set(p.relative_to(root).parts)
    }


def _lines(path: Path) -> list[str] | None:
    try:
        return path.read_text().splitlines(keepends=True)
    except (OSError, UnicodeDecodeError):
        return None  # binary: named, not diffed


def tree_diff(before: Path, after: Path) -> str:
    """The unified diff that turns `before` into `after`, file by file in path order."""
    old_files, new_files = _files(before), _files(after)
    chunks = []
    for rel in sorted(old_files | new_files):
        old = _lines(before / rel) if rel in old_files else []
        new = _lines(after / rel) if rel in new_files else []
        if old == new:
            continue
        if old is None or new is None:
            chunks.append(f"Binary files a/{rel} and b/{rel} differ\n")
            continue
        source = f"a/{rel}" if rel in old_files else "/dev/null"
        target = f"b/{rel}" if rel in new_files else "/dev/null"
        body = "".join(
            line if line.endswith("\n") else line + "\n\\ No newline at end of file\n"
            for line in difflib.unified_diff(old, new, source, target)
        )
        chunks.append(f"diff --git a/{rel} b/{rel}\n{body}")
    return "".join(chunks)
