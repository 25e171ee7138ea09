"""One temp root per process for every workspace it creates, named with the owner's PID: `terminus-run-<pid>-*`.

A harness killed with kill -9 cannot remove its workspaces. The next process that creates a workspace removes
every root whose owner is dead, the way `procs._remove_stale` removes the cgroups of dead owners. Roots of
live processes, and of other users (whose liveness we may not probe), are left alone.
"""

from __future__ import annotations

import atexit
import logging
import os
import shutil
import tempfile
import threading
from pathlib import Path

from terminus.sandbox.procs import owner_alive

log = logging.getLogger(__name__)

PREFIX = "terminus-run-"
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
        if owner == os.getpid() or owner_alive(owner) is not False:
            continue
        shutil.rmtree(path, ignore_errors=True)
        if not path.exists():
            removed.append(path)
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
        shutil.rmtree(root, ignore_errors=True)


def remove_own_root() -> None:
    """Remove this process's root now: for exits that skip atexit (`os._exit` from a signal handler)."""
    if _current is not None and _current[0] == os.getpid():
        shutil.rmtree(_current[1], ignore_errors=True)
