"""Clearing setuid and setgid bits below a folder a sandbox could write, following no link (docker's way out).

Root in a docker container is root on the host's bind mounts: `cp /bin/sh x; chmod u+s x` in the workspace
leaves a setuid-root program on the host, which any host-side copy (`shutil.copy2` keeps the mode) would spread.
The docker sandbox calls `clear_setid` on each folder it binds writable after every command, once nothing runs in
the container. The walk never follows a link and never recurses: each folder is reached from `root` one
component at a time with `O_NOFOLLOW` (so a folder swapped for a link is refused, at any depth, and a tree
thousands of levels deep costs time, not the stack), and a file's mode is changed through an `O_PATH` descriptor
of the very entry that was checked.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import stat
from pathlib import Path

log = logging.getLogger(__name__)

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
SETID = stat.S_ISUID | stat.S_ISGID


def _open_dir(root: Path, parts: tuple[str, ...]) -> int:
    """An fd of `root/parts...`, each component opened relative to the last without following a link."""
    fd = os.open(root, _DIR_FLAGS)
    try:
        for name in parts:
            nxt = os.open(name, _DIR_FLAGS, dir_fd=fd)
            os.close(fd)
            fd = nxt
    except BaseException:
        os.close(fd)
        raise
    return fd


def _clear(dir_fd: int, name: str) -> None:
    """Clear the setuid/setgid bits of the regular file `name` in `dir_fd`, if it still is one (not a link)."""
    fd = os.open(name, os.O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dir_fd)
    try:
        info = os.fstat(fd)
        if stat.S_ISREG(info.st_mode) and info.st_mode & SETID:
            # chmod through /proc/self/fd acts on the inode this O_PATH fd holds, whatever is at `name` now.
            os.chmod(f"/proc/self/fd/{fd}", stat.S_IMODE(info.st_mode) & ~SETID)
    finally:
        os.close(fd)


def clear_setid(root: Path) -> tuple[int, list[str]]:
    """Clear the setuid and setgid bits of every regular file below `root` (a folder the host made); returns how
    many files had them and the paths (relative to `root`) whose bits could not be cleared, with the reason
    (another user's file, for a harness that is not root). Links, and folders replaced by links, are skipped."""
    found, failed = 0, []
    pending: list[tuple[str, ...]] = [()]
    while pending:
        parts = pending.pop()
        try:
            fd = _open_dir(root, parts)
        except OSError as err:
            if err.errno not in (errno.ENOENT, errno.ELOOP, errno.ENOTDIR):  # gone or swapped: nothing to clear
                failed.append(f"{'/'.join(parts) or '.'}: {err.strerror}")
            continue
        try:
            listed = []
            with os.scandir(fd) as entries:
                for entry in entries:
                    with contextlib.suppress(FileNotFoundError):
                        listed.append((entry.name, entry.stat(follow_symlinks=False).st_mode))
            for name, mode in listed:
                if stat.S_ISDIR(mode):
                    pending.append((*parts, name))
                elif stat.S_ISREG(mode) and mode & SETID:
                    found += 1
                    try:
                        _clear(fd, name)
                    except OSError as err:
                        if err.errno != errno.ENOENT:
                            failed.append(f"{'/'.join((*parts, name))}: {err.strerror}")
        except OSError as err:
            failed.append(f"{'/'.join(parts) or '.'}: {err.strerror}")
        finally:
            with contextlib.suppress(OSError):
                os.close(fd)
    return found, failed
