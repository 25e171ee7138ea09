"""Whole-tree host work below folders that code in a sandbox (or a repository) can write: walking, copying, removing.

`hostfs` reads and writes one file; this module does what touches many: the copy of a repository into a workspace
(`copying`), the removal of a workspace or a run root (`tmproot`, `workspace.Workspace.remove`). The same rule holds
(docs/ARCHITECTURE.md, "The sandbox boundary"): no path the sandbox could write is ever followed. Every component
is opened relative to its parent's file descriptor with `O_NOFOLLOW`, on the side read and the side written alike;
a path that passes through a link, leaves its folder (`..`) or names nothing (`.`, an empty component) is refused,
never resolved. Removal is iterative and holds two descriptors at a time whatever the depth, so a tree a million
folders deep costs time, not a `RecursionError`; it climbs back with `..` only after checking that the folder it
reaches is the one it left (device and inode), so a folder moved away mid-removal cannot lead it elsewhere.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import re
import stat
from collections.abc import Iterator
from pathlib import Path, PurePosixPath

from terminus.sandbox.errors import SandboxError

log = logging.getLogger(__name__)

# Names the repository chose, as they may be printed: a terminal would obey the escapes in them (OSC 52 clipboard
# writes, screen clears), so C0 and C1 controls and DEL are shown as `\xNN`.
_CONTROLS = re.compile(r"[\x00-\x1f\x7f-\x9f]")
# Per-entry failures that make one path uncopyable (a name too long for this filesystem, bytes it refuses) rather
# than the copy impossible (a full disk): the path is skipped and named like a refused one.
ENTRY_ERRNOS = {errno.ENAMETOOLONG, errno.EILSEQ, errno.EINVAL, errno.ELOOP, errno.ENOTDIR, errno.EACCES}

DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


class RefusedPath(SandboxError):
    """A listed path is not a plain relative path, or it passes through a link or a non-folder: never followed."""


def printable(name: str) -> str:
    """`name` with control characters shown as `\\xNN`, safe to print.

    >>> printable("a\\x1b]52;c;aGk=\\x07b")
    'a\\\\x1b]52;c;aGk=\\\\x07b'
    """
    return _CONTROLS.sub(lambda m: f"\\x{ord(m.group()):02x}", name)


def plain_parts(rel: str) -> list[str]:
    """The components of a relative path that has no `..`, `.` or empty component; RefusedPath otherwise.

    >>> plain_parts("src/a.py")
    ['src', 'a.py']
    >>> plain_parts("lnk/../../etc/passwd")  # doctest: +IGNORE_EXCEPTION_DETAIL
    Traceback (most recent call last):
    terminus.sandbox.fdtree.RefusedPath: 'lnk/../../etc/passwd': not a plain relative path
    """
    parts = rel.split("/")
    if not rel or rel.startswith("/") or any(p in ("", ".", "..") for p in parts) or "\0" in rel:
        raise RefusedPath(f"{rel!r}: not a plain relative path")
    return parts


class DirChain:
    """Open folders along relative paths below one root, each component with `O_NOFOLLOW`.

    It keeps the descriptors of the last path's folders, so a sorted listing opens each folder once; at most one
    descriptor per level of the deepest path is open. `create=True` makes missing folders (mode 0o700 until the
    caller sets the source's) and refuses an existing entry that is not a plain folder, as it refuses on the side
    read."""

    def __init__(self, root: Path | int, create: bool = False) -> None:
        self.root_fd = root if isinstance(root, int) else os.open(root, DIR_FLAGS)
        self._own_root = not isinstance(root, int)
        self.create = create
        self._names: list[str] = []
        self._fds: list[int] = []

    def folder(self, parts: list[str]) -> int:
        """The descriptor of the folder `parts` (all of them folders), valid until the next call."""
        keep = 0
        while keep < min(len(parts), len(self._names)) and parts[keep] == self._names[keep]:
            keep += 1
        for fd in self._fds[keep:]:
            os.close(fd)
        del self._fds[keep:], self._names[keep:]
        for name in parts[keep:]:
            parent = self._fds[-1] if self._fds else self.root_fd
            if self.create:
                with contextlib.suppress(FileExistsError):
                    os.mkdir(name, 0o700, dir_fd=parent)
            try:
                fd = os.open(name, DIR_FLAGS, dir_fd=parent)
            except OSError as err:
                if err.errno in (errno.ELOOP, errno.ENOTDIR):
                    raise RefusedPath(f"{'/'.join(parts)}: {name} is a link or not a folder") from err
                raise
            self._fds.append(fd)
            self._names.append(name)
        return self._fds[-1] if self._fds else self.root_fd

    def close(self) -> None:
        for fd in self._fds:
            os.close(fd)
        self._fds, self._names = [], []
        if self._own_root:
            os.close(self.root_fd)
            self._own_root = False

    def __enter__(self) -> DirChain:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def walk(root_fd: int, rel: str = "") -> Iterator[tuple[str, os.stat_result]]:
    """(relative path, lstat) of every entry below the folder `root_fd/rel` (itself excluded), links not followed,
    folders before what they hold; unreadable folders are skipped."""
    top = os.open(rel, DIR_FLAGS, dir_fd=root_fd) if rel else os.dup(root_fd)
    try:
        for folder, dirs, files, dfd in os.fwalk(".", dir_fd=top, follow_symlinks=False):
            base = PurePosixPath(rel) / folder if rel else PurePosixPath(folder)
            for name in sorted(dirs + files):
                try:
                    info = os.stat(name, dir_fd=dfd, follow_symlinks=False)
                except OSError:
                    continue
                yield str(base / name).removeprefix("./"), info
    finally:
        os.close(top)


def remove_tree(path: Path) -> bool:
    """Remove `path` and everything below it without following a link and without recursion; True when it is
    gone. Never raises: a failure is logged in one line and False returned (the caller decides what follows)."""
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return True
    except OSError as err:
        log.warning("cannot remove %s: %s", path, err)
        return False
    try:
        if not stat.S_ISDIR(info.st_mode):
            os.unlink(path)
            return True
        _empty_folder(path, info)
        os.rmdir(path)
        return True
    except OSError as err:
        log.warning("cannot remove %s: %s", path, err)
        return False


def _open_folder(name: str, parent: int) -> int:
    """Open the folder `name` below `parent` without following a link; one the sandbox made unreadable (its own, mode
    0o000) is first made 0o700 through an `O_PATH` descriptor, so that a harness that is not root can empty it."""
    try:
        return os.open(name, DIR_FLAGS, dir_fd=parent)
    except PermissionError:
        pfd = os.open(name, os.O_PATH | os.O_NOFOLLOW | os.O_DIRECTORY | os.O_CLOEXEC, dir_fd=parent)
        try:
            os.chmod(f"/proc/self/fd/{pfd}", 0o700)
        finally:
            os.close(pfd)
        return os.open(name, DIR_FLAGS, dir_fd=parent)


def _scan(fd: int) -> list[str]:
    """Unlink every entry of the folder `fd` that is not a folder; the names of its folders."""
    with contextlib.suppress(OSError):  # a folder the sandbox made read-only: its owner may still empty it
        os.fchmod(fd, 0o700)
    folders = []
    with os.scandir(fd) as entries:
        for entry in entries:
            try:
                if entry.is_dir(follow_symlinks=False):
                    folders.append(entry.name)
                else:
                    os.unlink(entry.name, dir_fd=fd)
            except FileNotFoundError:
                continue
    return folders


def _empty_folder(path: Path, info: os.stat_result) -> None:
    """Remove everything below the folder `path` (lstat `info`), depth first, two descriptors open at a time."""
    fd = os.open(path, DIR_FLAGS)
    st = os.fstat(fd)
    if (st.st_dev, st.st_ino) != (info.st_dev, info.st_ino):
        os.close(fd)
        raise OSError(errno.ESTALE, "replaced while being removed", str(path))
    # One frame per level below `path`: its name in its parent, its identity (checked when climbing back to it), and
    # the folders it still holds. Each folder is listed once on the way down and once more before it is removed.
    frames: list[tuple[str, tuple[int, int], list[str]]] = [("", (st.st_dev, st.st_ino), _scan(fd))]
    try:
        while True:
            pending = frames[-1][2]
            if not pending:
                pending += _scan(fd)  # anything that appeared meanwhile
            if pending:
                child = pending.pop()
                try:
                    cfd = _open_folder(child, fd)
                except OSError as err:
                    if err.errno not in (errno.ELOOP, errno.ENOTDIR, errno.ENOENT):
                        raise
                    with contextlib.suppress(FileNotFoundError):
                        os.unlink(child, dir_fd=fd)  # swapped for a link or a file since the listing
                    continue
                st = os.fstat(cfd)
                os.close(fd)
                fd = cfd
                frames.append((child, (st.st_dev, st.st_ino), _scan(fd)))
                continue
            if len(frames) == 1:
                return
            name = frames.pop()[0]
            parent = os.open("..", DIR_FLAGS, dir_fd=fd)
            os.close(fd)
            fd = parent
            st = os.fstat(fd)
            if (st.st_dev, st.st_ino) != frames[-1][1]:
                raise OSError(errno.ESTALE, f"a folder below it was moved away during removal ({name})", str(path))
            os.rmdir(name, dir_fd=fd)
    finally:
        os.close(fd)
