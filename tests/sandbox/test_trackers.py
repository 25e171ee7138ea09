"""Both leftover-process trackers: the pids cgroup (where writable) and the environment-marker fallback."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from terminus.sandbox import make_sandbox, procs


def _alive_with(token: str) -> list[int]:
    found = []
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                if token in Path(f"/proc/{entry.name}/cmdline").read_bytes().decode(errors="replace"):
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
    with make_sandbox("local") as box:
        expected = procs.EnvMarker if tracker == "marker" else procs.PidsCgroup
        assert isinstance(box.tracker, expected)
        result = box.run(
            "setsid sleep 4321 & (setsid sleep 4322 &) ; nohup sleep 4323 >/dev/null 2>&1 & sleep 0.2; echo up", 10
        )
        # the nohup'd sleep may die in the process-group kill; the two setsid'd ones only the tracker can find
        assert result.output == "up\n" and result.leftover_processes >= 2
        assert not [p for t in ("sleep 4321", "sleep 4322", "sleep 4323") for p in _alive_with(t)]
