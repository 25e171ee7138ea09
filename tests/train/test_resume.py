"""A training run longer than one slurm job keeps its curve: `rule grpo` killed mid-run (what slurm does at a job's
time limit) and run again resumes from its last checkpoint, and the metrics it publishes hold every step once,
although Snakemake deleted the failed job's declared outputs in between."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
import yaml

from builders import cmdline, descendants
from terminus.config import ROOT
from terminus.train.run import LIVE_LOG, MetricsJsonl, publish_metrics

BIN = str(Path(sys.executable).parent)


def rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()] if path.is_file() else []


@pytest.fixture
def run(tiny_model, sft_data, tmp_path):
    """A run folder under the repository (where the rules write) with GRPO's inputs in place: the tiny model as
    the SFT export, the training corpus as the validated tasks, and a 5-step recipe that saves every 2 steps."""
    name = f"resume-test-{uuid.uuid4().hex[:8]}"
    folder = ROOT / "results" / name
    tasks, _ = sft_data
    (folder / "tasks").mkdir(parents=True)
    shutil.copytree(tiny_model, folder / "models" / "sft-merged")
    shutil.copy(tasks, folder / "tasks" / "valid.jsonl")
    shutil.copytree(tasks.parent / "repos", folder / "tasks" / "repos")  # workspaces are relative to the task file
    (folder / "tasks" / "valid.validation.trajectories.jsonl").write_text((tasks.parent / "traj.jsonl").read_text())
    recipe = yaml.safe_load((ROOT / "configs/grpo/tiny.yaml").read_text())
    recipe |= {"max_steps": 5, "save_steps": 2, "max_turns": 2, "max_new_tokens": 24, "report_to": "none"}
    recipe |= {"max_completion_length": 1024}
    (tmp_path / "recipe.yaml").write_text(yaml.safe_dump(recipe))
    config = yaml.safe_load((ROOT / "configs/config.yaml").read_text())
    config["run"] = name
    config["model"]["grpo_recipe"] = str(tmp_path / "recipe.yaml")
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(config))
    yield folder, tmp_path / "config.yaml"
    shutil.rmtree(folder, ignore_errors=True)


def job_log(folder: Path) -> str:
    log = folder / "logs" / "grpo.log"
    return log.read_text()[-3000:] if log.is_file() else ""


def snakemake_grpo(folder: Path, config: Path) -> list[str]:
    """The grpo rule alone, on inputs put in place by hand (their own rules are not run)."""
    target = f"results/{folder.name}/models/grpo/final"
    options = ["--configfile", str(config), "--cores", "1", "--allowed-rules", "grpo", "--rerun-triggers=mtime"]
    return [sys.executable, "-m", "snakemake", *options, target]


@pytest.mark.slow
def test_a_grpo_job_killed_mid_run_and_rerun_keeps_its_whole_curve(run):
    folder, config = run
    grpo = folder / "models" / "grpo"
    env = {**os.environ, "PATH": f"{BIN}:{os.environ['PATH']}"}
    command = snakemake_grpo(folder, config)
    first = subprocess.Popen(
        command, cwd=ROOT, env=env, start_new_session=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    # kill -9 the job once it has logged a step past its first checkpoint (step 3 is then lost work, redone)
    deadline = time.time() + 900
    while time.time() < deadline and not any(r.get("step") == 3 and "reward" in r for r in rows(grpo / LIVE_LOG)):
        assert first.poll() is None, first.stdout.read()[-2000:] + job_log(folder)
        time.sleep(0.2)
    assert (grpo / "checkpoint-2").is_dir()
    jobs = [p for p in descendants(first.pid) if "terminus grpo" in cmdline(p) or "terminus.train.grpo" in cmdline(p)]
    assert jobs, "the grpo job's process was not found"
    for pid in jobs:
        os.kill(pid, signal.SIGKILL)
    text = first.communicate(timeout=120)[0]
    assert first.returncode != 0, text[-3000:]
    assert not (grpo / "metrics.jsonl").exists()  # Snakemake removed the failed job's declared outputs
    before = [r for r in rows(grpo / LIVE_LOG) if "reward" in r]
    assert [r["step"] for r in before][:3] == [1, 2, 3]

    again = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=1200)
    assert again.returncode == 0, (again.stdout + again.stderr)[-2000:] + job_log(folder)
    curve = [r for r in rows(grpo / "metrics.jsonl") if "reward" in r]
    assert [r["step"] for r in curve] == [1, 2, 3, 4, 5]  # no step lost, none twice
    # steps 1-2 are the first segment's rows (their step_time is wall clock: a run started over would differ), and
    # step 3, which the kill cut after its checkpoint, was trained again
    assert "step_time" in curve[0] and curve[:2] == before[:2] and curve[2] != before[2]
    assert [r for r in rows(grpo / "metrics.jsonl") if "train_runtime" in r][-1]["step"] == 5


class State:
    def __init__(self, step: int) -> None:
        self.global_step, self.epoch, self.is_world_process_zero = step, step / 10, True


def test_a_resumed_segment_drops_the_steps_it_redoes_and_a_cut_last_line(tmp_path):
    callback = MetricsJsonl(tmp_path)
    for step in (1, 2, 3):
        callback.on_log(None, State(step), None, logs={"reward": step / 10})
    callback.on_log(None, State(3), None, logs={"train_runtime": 1.0})
    with (tmp_path / LIVE_LOG).open("a") as fh:
        fh.write('{"step": 4, "rew')  # a kill inside a write of an older version
    callback.on_train_begin(None, State(2), None)  # resumed from checkpoint-2
    callback.on_log(None, State(3), None, logs={"reward": 0.9})
    published = rows(publish_metrics(tmp_path))
    assert [(r["step"], r["reward"]) for r in published] == [(1, 0.1), (2, 0.2), (3, 0.9)]


def test_checkpoints_of_other_inputs_are_moved_aside_not_resumed(tmp_path):
    """A recipe edited (or a starting model made again) between two runs into one output_dir: the new run starts
    fresh and the old checkpoints and log are kept under superseded/; the same inputs resume (a resubmitted job)."""
    from terminus.train.run import RESUME_INPUTS, resume_point

    out = tmp_path / "grpo"
    first = {"recipe": {"learning_rate": 1e-4, "beta": 0.0}, "model": "aaa"}
    assert resume_point(str(out), first) is None  # nothing to resume yet; the inputs are recorded
    (out / "checkpoint-6").mkdir()
    (out / "checkpoint-6" / "trainer_state.json").write_text("{}")
    (out / LIVE_LOG).write_text('{"step": 1}\n')
    assert resume_point(str(out), first) == str(out / "checkpoint-6")  # same inputs: resumed
    edited = {"recipe": {"learning_rate": 2e-5, "beta": 0.2}, "model": "aaa"}
    assert resume_point(str(out), edited) is None
    kept = out / "superseded" / "0"
    assert (kept / "checkpoint-6" / "trainer_state.json").is_file() and (kept / LIVE_LOG).is_file()
    assert json.loads((kept / RESUME_INPUTS).read_text()) == first and not (out / "checkpoint-6").exists()
    assert json.loads((out / RESUME_INPUTS).read_text()) == edited
    (out / "checkpoint-2").mkdir()
    assert resume_point(str(out), {**edited, "model": "bbb"}) is None  # the SFT model made again
    assert (out / "superseded" / "1" / "checkpoint-2").is_dir()
