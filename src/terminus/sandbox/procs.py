"""Finding and killing every process a command left behind, including ones that called setsid or double-forked.

A process group kill misses children that start a new session, and those hold the output pipe open.
Two trackers, chosen at start-up:

- `PidsCgroup`: a pids cgroup of our own (v1 `pids` controller, or a cgroup v2 subtree with `pids` enabled).
  Every process the command creates is a member, whatever it does, and `pids.max` bounds fork bombs even for
  root, whom RLIMIT_NPROC does not bind.
- `EnvMarker`: where no cgroup is writable, each command carries a unique environment variable and
  leftovers are found by scanning /proc/*/environ. A process that rewrites its environment and re-execs
  escapes it; docs/use.md ("Sandboxes") says so.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import time
import uuid
from pathlib import Path

log = logging.getLogger(__name__)

MARKER_VAR = "TERMINUS_SANDBOX_ID"


def _kill_until_empty(members, budget_s: float = 10.0) -> int:
    """SIGSTOP then SIGKILL members until none remain; stopped processes cannot fork, so this converges."""
    killed: set[int] = set()
    deadline = time.monotonic() + budget_s
    while time.monotonic() < deadline:
        pids = [p for p in members() if p != os.getpid()]
        if not pids:
            break
        for sig in (signal.SIGSTOP, signal.SIGKILL):
            for pid in pids:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, sig)
        killed.update(pids)
        time.sleep(0.005)
    else:
        log.warning("processes still alive after %.0f s of killing: %s", budget_s, members())
    _reap(killed)
    return len(killed)


def _reap(pids: set[int]) -> None:
    """Collect zombies that are our own children (orphans are the init's or the subreaper's business)."""
    for pid in pids:
        with contextlib.suppress(ChildProcessError, OSError):
            os.waitpid(pid, os.WNOHANG)


def _cgroup_members(path: Path) -> list[int]:
    try:
        return [int(p) for p in (path / "cgroup.procs").read_text().split()]
    except (OSError, ValueError):
        return []


class PidsCgroup:
    """One pids cgroup per sandbox."""

    def __init__(self, path: Path, max_pids: int | None) -> None:
        self.path = path
        path.mkdir()
        if max_pids:
            (path / "pids.max").write_text(str(max_pids))

    @property
    def procs_file(self) -> Path:
        return self.path / "cgroup.procs"

    @classmethod
    def create(cls, max_pids: int | None) -> PidsCgroup | None:
        base = _writable_pids_base()
        if base is None:
            return None
        _remove_stale(base)
        try:
            return cls(base / f"terminus-{os.getpid()}-{uuid.uuid4().hex[:12]}", max_pids)
        except OSError as err:
            log.info("no pids cgroup (%s); falling back to environment markers", err)
            return None

    def members(self) -> list[int]:
        return _cgroup_members(self.path)

    def kill_all(self) -> int:
        return _kill_until_empty(self.members)

    def remove(self) -> None:
        self.kill_all()
        with contextlib.suppress(OSError):
            self.path.rmdir()


def _remove_stale(base: Path) -> None:
    """Clean up after harness processes that died without closing their sandboxes (kill -9): what their
    commands left running is killed and the cgroup removed."""
    for path in base.glob("terminus-*-*"):
        try:
            owner = int(path.name.split("-")[1])
        except ValueError:
            continue
        if owner_alive(owner) is False:
            _kill_until_empty(lambda path=path: _cgroup_members(path), budget_s=2.0)
            with contextlib.suppress(OSError):
                path.rmdir()


def owner_alive(pid: int) -> bool | None:
    """True if the process lives, False if it is gone (or a zombie), None if we may not tell (another user's)."""
    try:
        os.kill(pid, 0)
        if Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[-1].split()[0] == "Z":
            return False  # dead, not yet reaped by its parent
    except (ProcessLookupError, FileNotFoundError):
        return False
    except (PermissionError, OverflowError, ValueError):  # another user's, or no pid at all (a planted name)
        return None
    return True


class EnvMarker:
    """Tracks a sandbox's processes by an environment variable they inherit."""

    def __init__(self) -> None:
        self.value = uuid.uuid4().hex
        self._needle = f"{MARKER_VAR}={self.value}".encode()

    def members(self) -> list[int]:
        found = []
        for entry in os.scandir("/proc"):
            if not entry.name.isdigit():
                continue
            try:
                with open(f"/proc/{entry.name}/environ", "rb") as fh:
                    if self._needle in fh.read():
                        found.append(int(entry.name))
            except OSError:
                continue
        return found

    def kill_all(self) -> int:
        return _kill_until_empty(self.members)

    def remove(self) -> None:
        self.kill_all()


_PIDS_BASE: Path | bool | None = False  # False: not probed yet


def _writable_pids_base() -> Path | None:
    """The cgroup directory under which we may create pids cgroups, or None."""
    global _PIDS_BASE
    if _PIDS_BASE is not False:
        return _PIDS_BASE
    _PIDS_BASE = None
    if os.environ.get("TERMINUS_NO_CGROUP"):
        return None
    try:
        own = {}
        for line in Path("/proc/self/cgroup").read_text().splitlines():
            _, controllers, path = line.split(":", 2)
            own[controllers] = path
        candidates = []
        for controllers, path in own.items():
            if "pids" in controllers.split(","):
                candidates.append(Path("/sys/fs/cgroup/pids") / path.lstrip("/"))
        if "" in own:  # cgroup v2: usable only where our own cgroup delegates the pids controller
            v2 = Path("/sys/fs/cgroup") / own[""].lstrip("/")
            with contextlib.suppress(OSError):
                if "pids" in (v2 / "cgroup.subtree_control").read_text(errors="ignore").split():
                    candidates.append(v2)
        for base in candidates:
            if (base / "cgroup.procs").exists() and os.access(base, os.W_OK):
                _PIDS_BASE = base
                break
    except OSError:
        pass
    return _PIDS_BASE


def make_tracker(max_pids: int | None) -> PidsCgroup | EnvMarker:
    return PidsCgroup.create(max_pids) or EnvMarker()
