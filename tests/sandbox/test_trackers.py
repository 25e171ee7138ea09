"""Both leftover-process trackers: the pids cgroup (where writable) and the environment-marker fallback."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from terminus.sandbox import SandboxSpec, make_sandbox, procs


def _alive_with(token: str) -> list[int]:
    found = []
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                if token in Path(f"/proc/{entry.name}/cmdline").read_bytes().replace(b"\0", b" ").decode(
                    errors="replace"
                ):
                    found.append(int(entry.name))
            except OSError:
                pass
    return found


@pytest.mark.parametrize("tracker", ["cgroup", "marker"])
def test_daemons_are_killed_by_either_tracker(tracker, monkeypatch):
    if tracker == "marker":
        monkeypatch.setattr(procs, "_PIDS_BASE", None)  # as on a machine without a writable cgroup
    elif procs._writable_pids_base() is None:
        pytest.skip("no writable pids cgroup on this machine")
    with make_sandbox(SandboxSpec("local")) as box:
        expected = procs.EnvMarker if tracker == "marker" else procs.PidsCgroup
        assert isinstance(box.tracker, expected)
        result = box.run(
            "setsid sleep 4321 & (setsid sleep 4322 &) ; nohup sleep 4323 >/dev/null 2>&1 & sleep 0.2; echo up", 10
        )
        # the nohup'd sleep may die in the process-group kill; the two setsid'd ones only the tracker can find
        assert result.output == "up\n" and result.leftover_processes >= 2
        assert not [p for t in ("sleep 4321", "sleep 4322", "sleep 4323") for p in _alive_with(t)]


def test_a_killed_harness_leaves_nothing_behind(tmp_path):
    """kill -9 of the harness mid-command: the next sandbox created on the machine cleans up after it."""
    import signal
    import subprocess
    import sys
    import time

    base = procs._writable_pids_base()
    if base is None:
        pytest.skip("no writable pids cgroup on this machine")
    # the command is spelled in two pieces so that this script's own command line does not match it
    script = (
        "from terminus.sandbox import SandboxSpec, make_sandbox\n"
        "make_sandbox(SandboxSpec('local')).run('sleep ' + '4324', 600)\n"
    )
    child = subprocess.Popen([sys.executable, "-c", script])
    deadline = time.monotonic() + 30
    while not _alive_with("sleep 4324") and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _alive_with("sleep 4324")
    child.send_signal(signal.SIGKILL)
    child.wait()
    assert _alive_with("sleep 4324")  # the command outlived its harness...
    with make_sandbox(SandboxSpec("local")):  # ...until the next sandbox is made
        pass
    assert not _alive_with("sleep 4324")
    assert not list(base.glob(f"terminus-{child.pid}-*"))
