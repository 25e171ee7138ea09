"""How a repository becomes a workspace: the files git sees, or everything; special files never.

`git` mode (the default) copies what `git ls-files --cached --others --exclude-standard` lists when the source
is a git work tree (tracked files, plus untracked files that are not ignored), so a checkout's `.venv`,
`results/`, build folders and caches stay out, and the repository's own `.git` folder so that `git status` and
`git diff` work inside. Outside a work tree, in a folder the enclosing work tree ignores (task snapshots under
`results/`), and in `all` mode, every file is copied. Named pipes, sockets
and devices are skipped in both modes (copying a pipe blocks, a device is not the repository's): the caller
gets their paths to report.

A whole-folder copy can be capped (`max_bytes`; the commands that copy a user's folder default to
`DEFAULT_MAX_COPY_MB`): started in a home folder, it would otherwise copy gigabytes for every sandbox. The size is
measured first (regular files' sizes, links not followed), stopping as soon as it passes the cap, so an oversized
folder costs a partial walk and no copy.
"""

from __future__ import annotations

import logging
import os
import shutil
import stat
import subprocess
from pathlib import Path

from terminus.sandbox.errors import SandboxError

log = logging.getLogger(__name__)

COPY_MODES = ("git", "all")
# The source can be a workspace a sandboxed command wrote (the main agent's, copied for its subagent): its
# `.git/config` is then the sandbox's, and a `core.fsmonitor` or hook there would run on the host. The read-only
# commands below run nothing else a repository's config can name (no filters, no diff drivers).
GIT_SAFE = ("-c", "core.fsmonitor=false", "-c", "core.hooksPath=/dev/null", "-c", "core.untrackedCache=false")
MB = 1_000_000
DEFAULT_MAX_COPY_MB = 200
COPY_CAP_FLAG = "--max-copy-mb"


class CopyTooLargeError(SandboxError):
    """A folder that would be copied whole is over the copy cap; nothing was copied."""


def in_git_work_tree(source: Path) -> bool:
    """Whether git copies `source` by its listing: inside a work tree, and not in a folder that tree ignores."""
    if shutil.which("git") is None:
        return False
    try:
        inside = subprocess.run(
            ["git", *GIT_SAFE, "-C", str(source), "rev-parse", "--is-inside-work-tree"],
            capture_output=True,
            text=True,
            timeout=60,
        )
        if inside.returncode != 0 or inside.stdout.strip() != "true":
            return False
        # A folder the enclosing repository ignores (a task snapshot under results/) is data, not part of that
        # repository: git would list nothing in it, so it is copied whole.
        ignored = subprocess.run(
            ["git", *GIT_SAFE, "-C", str(source), "check-ignore", "-q", "."], capture_output=True, timeout=60
        )
    except (OSError, subprocess.TimeoutExpired) as err:
        log.warning("git could not tell whether %s is a work tree (%s); copying every file", source, err)
        return False
    return ignored.returncode != 0


def size_up_to(source: Path, limit: int) -> int:
    """Bytes in `source`'s regular files (links not followed, unreadable folders skipped), counted until the
    total passes `limit`: a result over `limit` means "more than that", not the folder's whole size."""
    total = 0
    stack = [source]
    while stack:
        try:
            entries = list(os.scandir(stack.pop()))
        except OSError:
            continue
        for entry in entries:
            try:
                if entry.is_dir(follow_symlinks=False):
                    stack.append(Path(entry.path))
                elif entry.is_file(follow_symlinks=False):
                    total += entry.stat(follow_symlinks=False).st_size
            except OSError:
                continue
            if total > limit:
                return total
    return total


def check_copy_size(source: Path, max_bytes: int | None, mode: str = "git") -> None:
    """Raise CopyTooLargeError when `source` is copied whole (see `copy_repository`) and is over `max_bytes`
    (None: no cap)."""
    if max_bytes is None or (mode == "git" and in_git_work_tree(source)):
        return
    if size_up_to(source, max_bytes) > max_bytes:
        raise CopyTooLargeError(too_large(source, max_bytes, mode))


def too_large(source: Path, max_bytes: int, mode: str) -> str:
    why = "--copy all" if mode == "all" else "not a git work tree"
    return (
        f"{source} holds more than {max_bytes / MB:g} MB and would be copied whole into the sandbox ({why}); "
        f"point --repo at the project, or raise the cap with {COPY_CAP_FLAG} N (0: no cap)"
    )


def git_listing(source: Path) -> list[str] | None:
    """Paths (relative to `source`) git sees under it, or None when it is not inside a git work tree."""
    if not in_git_work_tree(source):
        return None
    try:
        listed = subprocess.run(
            ["git", *GIT_SAFE, "-C", str(source), "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
            capture_output=True,
            timeout=300,
        )
    except (OSError, subprocess.TimeoutExpired) as err:
        log.warning("git could not list %s (%s); copying every file", source, err)
        return None
    if listed.returncode != 0:
        return None
    paths = sorted({p for p in listed.stdout.decode(errors="surrogateescape").split("\0") if p})
    if (source / ".git").is_dir():  # the repository itself (a worktree's `.git` file points outside: left out)
        paths = [".git", *paths]
    return paths


def _walk(root: Path, rel: str) -> list[str]:
    """`rel` and, when it is a real folder, everything below it (symlinks are not followed)."""
    out = [rel]
    top = root / rel
    if top.is_dir() and not top.is_symlink():
        for folder, dirs, files in os.walk(top):
            base = Path(folder).relative_to(root)
            out += [str(base / name) for name in sorted(dirs + files)]
    return out


def copy_repository(source: Path, dest: Path, mode: str = "git", max_bytes: int | None = None) -> list[str]:
    """Copy `source` into the new folder `dest`; returns the special files skipped (relative paths).

    `max_bytes` caps a whole-folder copy (not a git work tree, or mode `all`): over it, CopyTooLargeError and
    nothing is copied (`dest` is not made). A git listing is not capped."""
    if mode not in COPY_MODES:
        raise ValueError(f"copy mode {mode!r}: choose one of {', '.join(COPY_MODES)}")
    listing = git_listing(source) if mode == "git" else None
    if listing is None:
        if max_bytes is not None and size_up_to(source, max_bytes) > max_bytes:
            raise CopyTooLargeError(too_large(source, max_bytes, mode))
        entries = [str(Path(f).relative_to(source)) for f in _iter_all(source)]
    else:
        entries = [e for rel in listing for e in _walk(source, rel)]
    dest.mkdir(parents=True)
    skipped = []
    copied = 0
    for rel in entries:
        src, dst = source / rel, dest / rel
        try:
            info = src.lstat()
        except FileNotFoundError:  # listed by git but deleted in the tree
            continue
        if stat.S_ISDIR(info.st_mode):
            dst.mkdir(parents=True, exist_ok=True)
            continue
        dst.parent.mkdir(parents=True, exist_ok=True)
        if stat.S_ISLNK(info.st_mode):
            os.symlink(os.readlink(src), dst)
        elif stat.S_ISREG(info.st_mode):
            copied += info.st_size
            if listing is None and max_bytes is not None and copied > max_bytes:  # it grew since it was measured
                raise CopyTooLargeError(too_large(source, max_bytes, mode))
            shutil.copy2(src, dst, follow_symlinks=False)
        else:
            skipped.append(rel)
    for rel in sorted({e for e in entries if (source / e).is_dir() and not (source / e).is_symlink()}):
        shutil.copystat(source / rel, dest / rel, follow_symlinks=False)  # after the files: mtimes stay
    if skipped:
        log.warning(
            "%s: skipped %d special files (pipes, sockets, devices): %s",
            source,
            len(skipped),
            ", ".join(skipped[:5]) + (" ..." if len(skipped) > 5 else ""),
        )
    return skipped


def _iter_all(source: Path):
    for folder, dirs, files in os.walk(source):
        for name in sorted(dirs + files):
            yield Path(folder) / name
