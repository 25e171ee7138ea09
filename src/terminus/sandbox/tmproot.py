"""One temp root per process for every workspace it creates, named with the owner's PID: `terminus-run-<pid>-*`.

A harness killed with kill -9 cannot remove its workspaces. The next process that creates a workspace removes
every root whose owner is dead, the way `procs._remove_stale` removes the cgroups of dead owners. Roots of
live processes, and of other users (whose liveness we may not probe), are left alone; so is anything by that name
that this user does not own or that is not a plain folder (any local user can make `$TMPDIR/terminus-run-1-x`).

Removal never raises (`fdtree.remove_tree`: iterative, links never followed), so a tree a sandbox made too deep
or unremovable cannot stop this run or a later one. A stale root that cannot be removed is renamed
`terminus-unremovable-*` and reported once, in one line; later sweeps leave it alone.
"""

from __future__ import annotations

import atexit
import logging
import os
import stat
import tempfile
import threading
from pathlib import Path

from terminus.sandbox.fdtree import remove_tree
from terminus.sandbox.procs import owner_alive

log = logging.getLogger(__name__)

PREFIX = "terminus-run-"
UNREMOVABLE = "terminus-unremovable-"
PID_MAX = 1 << 22  # the kernel's PID_MAX_LIMIT: a name with a larger "pid" is nobody's root (any user can make one)
_lock = threading.Lock()
_current: tuple[int, Path] | None = None  # (owner pid, root): a forked child makes its own


def remove_stale_roots(base: Path | None = None) -> list[Path]:
    """Remove the run roots under `base` (the temp dir) whose owner process is gone; returns what was removed."""
    removed = []
    for path in Path(base or tempfile.gettempdir()).glob(f"{PREFIX}*-*"):
        try:
            owner = int(path.name[len(PREFIX) :].split("-")[0])
        except ValueError:
            continue
        if not 0 < owner <= PID_MAX or owner == os.getpid() or owner_alive(owner) is not False:
            continue
        try:
            info = path.lstat()
        except OSError:
            continue
        if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.geteuid():
            continue
        if remove_tree(path):
            removed.append(path)
            continue
        aside = path.with_name(UNREMOVABLE + path.name[len(PREFIX) :])
        try:
            path.rename(aside)
            log.warning("could not remove the temp root of a dead run; left at %s (remove it by hand)", aside)
        except OSError as err:
            log.warning("could not remove or move aside the temp root %s: %s", path, err)
    if removed:
        log.info("removed %d temp roots of dead runs: %s", len(removed), ", ".join(p.name for p in removed))
    return removed


def run_root() -> Path:
    """This process's temp root (created on first use, after sweeping the roots of dead runs)."""
    global _current
    with _lock:
        if _current is not None and _current[0] == os.getpid() and _current[1].is_dir():
            return _current[1]
        remove_stale_roots()
        root = Path(tempfile.mkdtemp(prefix=f"{PREFIX}{os.getpid()}-"))
        atexit.register(_remove_own, os.getpid(), root)
        _current = (os.getpid(), root)
        return root


def _remove_own(owner: int, root: Path) -> None:
    """At exit, the owner removes its root; a forked child that inherited the handler leaves it alone."""
    if os.getpid() == owner:
        remove_tree(root)


def remove_own_root() -> None:
    """Remove this process's root now: for exits that skip atexit (`os._exit` from a signal handler)."""
    if _current is not None and _current[0] == os.getpid():
        remove_tree(_current[1])
