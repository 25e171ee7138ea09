"""GRPO refuses several training processes in one line, before anything joins a process group: its lockstep
rollouts would make each rank call generation a different number of times and TRL's collectives would deadlock."""

from __future__ import annotations

import os
import subprocess

from builders import TERMINUS
from terminus.config import ROOT


def test_grpo_under_several_processes_is_refused_in_one_line(tmp_path):
    env = {**os.environ, "WORLD_SIZE": "2", "RANK": "0", "LOCAL_RANK": "0"}
    argv = [TERMINUS, "grpo", "--recipe", str(ROOT / "configs/grpo/tiny.yaml"), "--output_dir", str(tmp_path / "g")]
    done = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode != 0
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error:") and "not 2 (WORLD_SIZE)" in lines[0], done.stderr
    assert not (tmp_path / "g").exists()


def test_one_process_passes():
    from terminus.train.grpo import refuse_several_processes

    refuse_several_processes({"WORLD_SIZE": "1"})
    refuse_several_processes({})
