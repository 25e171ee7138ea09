"""How a repository becomes a workspace: the files git sees, or everything; special files never.

`git` mode (the default) copies what `git ls-files --cached --others --exclude-standard` lists when the source
is a git work tree (tracked files, plus untracked files that are not ignored), so a checkout's `.venv`,
`results/`, build folders and caches stay out, and the repository's own `.git` folder so that `git status` and
`git diff` work inside. Outside a work tree, in a folder the enclosing work tree ignores (task snapshots under
`results/`), and in `all` mode, every file is copied. Named pipes, sockets
and devices are skipped in both modes (copying a pipe blocks, a device is not the repository's): the caller
gets their paths to report.

Nothing listed is trusted (docs/ARCHITECTURE.md, "The sandbox boundary"): the listing comes from the repository's
own index, which the repository (or, for a main agent's workspace, the sandbox) writes, and the tree can hold links.
Every path is copied through `fdtree`: it must be a plain relative path (no `..`, `.` or empty component), and
each of its components is opened with `O_NOFOLLOW` on the source side and on the copy's side, so a path that
passes through a link (`lnk/../../etc/x`, `ignored-link/secret`) is refused, named in one warning and never read or
written. A link that is itself listed is copied as a link, never followed. A repository owned by another user is
listed by git all the same (`safe.directory` for these read-only commands): only what git lists is copied, never its
ignored files, as for one's own.

A whole-folder copy can be capped (`max_bytes`; the commands that copy a user's folder default to
`DEFAULT_MAX_COPY_MB`): started in a home folder, it would otherwise copy gigabytes for every sandbox. The size is
measured first (regular files' sizes, links not followed), stopping as soon as it passes the cap, so an oversized
folder costs a partial walk and no copy.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import stat
import subprocess
from pathlib import Path

from terminus.sandbox import fdtree
from terminus.sandbox.errors import SandboxError

log = logging.getLogger(__name__)

COPY_MODES = ("git", "all")
# The source can be a workspace a sandboxed command wrote (the main agent's, copied for its subagent): its
# `.git/config` is then the sandbox's, and a `core.fsmonitor` or hook there would run on the host. The read-only
# commands below run nothing else a repository's config can name (no filters, no diff drivers).
# `safe.directory`: git refuses a repository another user owns ("dubious ownership"), and a refusal used to mean
# "not a work tree", so such a repository was copied whole, ignored secrets included; with fsmonitor and hooks off,
# these listing commands are as safe in it as in one's own.
GIT_SAFE = (
    "-c",
    "core.fsmonitor=false",
    "-c",
    "core.hooksPath=/dev/null",
    "-c",
    "core.untrackedCache=false",
    "-c",
    "safe.directory=*",
)
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
    with fdtree.DirChain(source) as chain:
        for _, info in fdtree.walk(chain.root_fd):
            if stat.S_ISREG(info.st_mode):
                total += info.st_size
                if total > limit:
                    break
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


def copy_repository(
    source: Path, dest: Path, mode: str = "git", max_bytes: int | None = None, owner: tuple[int, int] | None = None
) -> list[str]:
    """Copy `source` into the new folder `dest`; returns what was not copied (relative paths): special files, and
    paths refused because they are not plain or pass through a link (each kind named in one warning).

    `max_bytes` caps a whole-folder copy (not a git work tree, or mode `all`): over it, CopyTooLargeError and
    nothing is copied (`dest` is not made). A git listing is not capped. `owner` (uid, gid): who owns what is
    copied (the sandbox's user, when the harness is root); None: the harness."""
    if mode not in COPY_MODES:
        raise ValueError(f"copy mode {mode!r}: choose one of {', '.join(COPY_MODES)}")
    listing = git_listing(source) if mode == "git" else None
    if listing is None and max_bytes is not None and size_up_to(source, max_bytes) > max_bytes:
        raise CopyTooLargeError(too_large(source, max_bytes, mode))  # a partial walk, before anything is made
    dest.mkdir(parents=True)
    try:
        with fdtree.DirChain(source) as src, fdtree.DirChain(dest, create=True) as dst:
            entries = _entries(src, listing)
            regular = [i.st_size for _, i in entries if not isinstance(i, str) and stat.S_ISREG(i.st_mode)]
            if listing is None and max_bytes is not None and sum(regular) > max_bytes:  # it grew since measured
                raise CopyTooLargeError(too_large(source, max_bytes, mode))
            return _copy_entries(src, dst, entries, owner, source)
    except BaseException:
        fdtree.remove_tree(dest)
        raise


def _entries(src: fdtree.DirChain, listing: list[str] | None) -> list[tuple[str, os.stat_result | str]]:
    """(path, lstat) of what to copy, folders below a listed folder included; (path, reason) for a refused one."""
    if listing is None:
        return list(fdtree.walk(src.root_fd))
    out: list[tuple[str, os.stat_result | str]] = []
    for rel in listing:
        try:
            parts = fdtree.plain_parts(rel)
            info = os.stat(parts[-1], dir_fd=src.folder(parts[:-1]), follow_symlinks=False)
        except fdtree.RefusedPath as err:
            out.append((rel, str(err)))
            continue
        except FileNotFoundError:  # listed by git but deleted in the tree
            continue
        out.append((rel, info))
        if stat.S_ISDIR(info.st_mode):  # `.git`, a submodule's folder: everything below it, links not followed
            out += fdtree.walk(src.root_fd, rel)
    return out


def _copy_entries(src, dst, entries, owner, source: Path) -> list[str]:
    skipped, refused = [], []
    folders: dict[tuple[str, ...], os.stat_result | None] = {}  # listed (their lstat) or only on the way (None)
    for rel, info in entries:
        if isinstance(info, str):
            refused.append(rel)
            continue
        try:
            parts = fdtree.plain_parts(rel)
            sfd, dfd = src.folder(parts[:-1]), dst.folder(parts[:-1])
            for k in range(1, len(parts)):
                folders.setdefault(tuple(parts[:k]), None)
            name = parts[-1]
            if stat.S_ISDIR(info.st_mode):
                with contextlib.suppress(FileExistsError):
                    os.mkdir(name, 0o700, dir_fd=dfd)
                folders[tuple(parts)] = info
            elif stat.S_ISLNK(info.st_mode):
                os.symlink(os.readlink(name, dir_fd=sfd), name, dir_fd=dfd)
                if owner:
                    os.chown(name, *owner, dir_fd=dfd, follow_symlinks=False)
            elif stat.S_ISREG(info.st_mode):
                _copy_file(sfd, dfd, name, info, owner)
            else:
                skipped.append(rel)
        except (fdtree.RefusedPath, FileExistsError) as err:  # through a link made by an earlier entry, or twice
            log.debug("refused %s: %s", rel, err)
            refused.append(rel)
        except FileNotFoundError:  # deleted since it was listed
            continue
    for parts, info in sorted(folders.items(), reverse=True):  # after the files, so that their mtimes stay
        fd = dst.folder(list(parts))
        info = info or os.fstat(src.folder(list(parts)))
        if owner:
            os.fchown(fd, *owner)
        os.fchmod(fd, stat.S_IMODE(info.st_mode) & 0o777)
        os.utime(fd, ns=(info.st_atime_ns, info.st_mtime_ns))
    if owner:
        os.fchown(dst.root_fd, *owner)
    kinds = (("special files (pipes, sockets, devices)", skipped), ("paths through a link or not plain", refused))
    for kind, names in kinds:
        if names:
            log.warning(
                "%s: skipped %d %s: %s",
                source,
                len(names),
                kind,
                ", ".join(names[:5]) + (" ..." if len(names) > 5 else ""),
            )
    return skipped + refused


def _copy_file(sfd: int, dfd: int, name: str, info: os.stat_result, owner: tuple[int, int] | None) -> None:
    """Copy one regular file by descriptor: opened without following a link (and refused unless still a regular
    file), created exclusively; its permission bits (never setuid or setgid) and times kept."""
    fin = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=sfd)
    try:
        if not stat.S_ISREG(os.fstat(fin).st_mode):
            raise fdtree.RefusedPath(f"{name}: not a regular file any more")
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
        fout = os.open(name, flags, 0o600, dir_fd=dfd)
        try:
            while os.sendfile(fout, fin, None, 1 << 30) if _SENDFILE else _copy_chunk(fin, fout):
                pass
            if owner:
                os.fchown(fout, *owner)
            os.fchmod(fout, stat.S_IMODE(info.st_mode) & 0o777)
            os.utime(fout, ns=(info.st_atime_ns, info.st_mtime_ns))
        finally:
            os.close(fout)
    finally:
        os.close(fin)


_SENDFILE = hasattr(os, "sendfile")


def _copy_chunk(fin: int, fout: int) -> int:
    chunk = os.read(fin, 1 << 20)
    view = memoryview(chunk)
    while view:
        view = view[os.write(fout, view) :]
    return len(chunk)
