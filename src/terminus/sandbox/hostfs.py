"""Host-side reads and writes inside folders that code in a sandbox can write, without following its links.

The rule (docs/ARCHITECTURE.md, "The sandbox boundary"): the host never follows a path the sandbox can write. A
sandboxed command can replace any entry of its workspace, home, /tmp or shell-state folder by a symbolic link (to
a host file it cannot see, or to a path that does not exist yet) or by a FIFO, between two of the host's accesses.
Every host access below such a folder goes through this module: each path component is opened relative to the
folder with `O_NOFOLLOW` (so no link is followed, at any depth), a read accepts only a regular file (a FIFO or a
device is refused, never opened for blocking I/O), and a write first removes whatever entry is there and then
creates a new file exclusively (`O_CREAT | O_EXCL`), so no planted link or hard link receives the data.

`root` itself must be a folder the host made and the sandbox cannot rename (its parent is never bound inside).
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from collections.abc import Iterator
from pathlib import Path, PurePosixPath

from terminus.sandbox.errors import SandboxError

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


class UnsafePathError(SandboxError):
    """A path below a sandbox-writable folder is a link, a special file or leaves the folder: the host refuses it."""


def _parts(rel: str | os.PathLike) -> list[str]:
    parts = [p for p in PurePosixPath(os.fspath(rel)).parts if p not in ("", ".")]
    if not parts or parts[0] == "/" or ".." in parts:
        raise UnsafePathError(f"{os.fspath(rel)!r} is not a plain path below its folder")
    return parts


@contextlib.contextmanager
def _parent_fd(root: Path, parts: list[str]) -> Iterator[int]:
    """An fd of the folder holding the last component, each step opened without following a link."""
    fd = os.open(root, _DIR_FLAGS)
    try:
        for name in parts[:-1]:
            try:
                nxt = os.open(name, _DIR_FLAGS, dir_fd=fd)
            except OSError as err:
                if err.errno in (errno.ELOOP, errno.ENOTDIR):
                    raise UnsafePathError(f"{root}/{'/'.join(parts)}: {name} is not a plain folder") from err
                raise
            os.close(fd)
            fd = nxt
        yield fd
    finally:
        os.close(fd)


@contextlib.contextmanager
def _regular_file(root: Path, rel: str | os.PathLike) -> Iterator[tuple[int, os.stat_result]]:
    """(fd, fstat) of the regular file `root/rel`, opened without following a link at any depth and without blocking
    on a FIFO; FileNotFoundError when absent, UnsafePathError for a link or anything but a regular file."""
    parts = _parts(rel)
    with _parent_fd(Path(root), parts) as parent:
        try:
            fd = os.open(parts[-1], os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=parent)
        except OSError as err:
            if err.errno == errno.ELOOP:
                raise UnsafePathError(f"{root}/{rel} is a symbolic link; the host does not follow it") from err
            raise
        try:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode):
                raise UnsafePathError(f"{root}/{rel} is not a regular file; the host does not read it")
            os.set_blocking(fd, True)
            yield fd, info
        finally:
            os.close(fd)


def read_bytes(root: Path, rel: str | os.PathLike, limit: int | None = None) -> bytes:
    """The bytes of the regular file `root/rel` (at most `limit`); FileNotFoundError when absent, UnsafePathError
    when any component is a link or the file is not a regular file."""
    with _regular_file(root, rel) as (fd, _):
        chunks, size = [], 0
        while limit is None or size < limit:
            chunk = os.read(fd, 1 << 20 if limit is None else min(1 << 20, limit - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        return b"".join(chunks)


def read_text(root: Path, rel: str | os.PathLike, errors: str = "strict") -> str:
    return read_bytes(root, rel).decode("utf-8", errors)


def is_file(root: Path, rel: str | os.PathLike) -> bool:
    """Whether `root/rel` is a regular file reached without a link (a link or anything else: False)."""
    try:
        parts = _parts(rel)
        with _parent_fd(Path(root), parts) as parent:
            info = os.stat(parts[-1], dir_fd=parent, follow_symlinks=False)
    except (OSError, UnsafePathError):
        return False
    return stat.S_ISREG(info.st_mode)


def write_bytes(
    root: Path, rel: str | os.PathLike, data: bytes, mode: int = 0o644, owner: tuple[int, int] | None = None
) -> None:
    """Replace `root/rel` by a new regular file holding `data`: whatever entry was there (a link, a hard link to a
    host file, a FIFO) is removed first and never written through. `owner`: (uid, gid) to give the new file (the
    sandbox's user, for a file its commands rewrite)."""
    parts = _parts(rel)
    with _parent_fd(Path(root), parts) as parent:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(parts[-1], dir_fd=parent)
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
        try:
            fd = os.open(parts[-1], flags, mode, dir_fd=parent)
        except FileExistsError as err:  # re-planted between the unlink and the open: refuse, never follow
            raise UnsafePathError(f"{root}/{rel} was replaced while the host wrote it") from err
        try:
            if owner:
                os.fchown(fd, *owner)
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
        finally:
            os.close(fd)


def write_text(root: Path, rel: str | os.PathLike, text: str, owner: tuple[int, int] | None = None) -> None:
    write_bytes(root, rel, text.encode(), owner=owner)


def unlink(root: Path, rel: str | os.PathLike) -> None:
    """Remove the entry `root/rel` itself (a link is removed, not its target); absent is fine."""
    parts = _parts(rel)
    try:
        with _parent_fd(Path(root), parts) as parent, contextlib.suppress(FileNotFoundError):
            os.unlink(parts[-1], dir_fd=parent)
    except (FileNotFoundError, UnsafePathError):
        pass


def read_ends(root: Path, rel: str | os.PathLike, head: int, tail: int) -> tuple[bytearray, int, bytearray]:
    """(the first `head` bytes, how many bytes lie between, the last `tail` bytes) of the regular file `root/rel`,
    read without reading the middle, into buffers of their size: a file of at most `head + tail` bytes comes
    back whole as (content, 0, empty). Refuses a link or special file as `read_bytes` does."""
    with _regular_file(root, rel) as (fd, info):

        def fill(size: int, offset: int) -> bytearray:
            buffer = bytearray(size)
            view, done = memoryview(buffer), 0
            while done < size and (count := os.preadv(fd, [view[done : done + (1 << 20)]], offset + done)):
                done += count
            view.release()
            del buffer[done:]  # a file that shrank meanwhile
            return buffer

        if info.st_size <= head + tail:
            return fill(info.st_size, 0), 0, bytearray()
        first, last = fill(head, 0), fill(tail, info.st_size - tail)
        return first, info.st_size - head - tail, last
