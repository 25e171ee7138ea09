"""The SWE stages that run past one slurm job at paper scale: the corpus stage with the SWE selection (16-78 h) and a
SWE-Bench Pro eval cell (8-23 h). Each rule's job killed -9 mid-run (what slurm does at a job's time limit) and run
again redoes no instance the first job finished, and writes what an uninterrupted run writes (the corpus byte for
byte; the cell's records wall clock aside)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
import yaml

from builders import kill_job, lines_done
from terminus.config import ROOT
from terminus.reproducibility import table_lines
from terminus.sandbox.bwrap import bwrap_path

BIN = str(Path(sys.executable).parent)
COPIES = 4
OUTPUTS = ("tasks.jsonl", "tasks.stats.json", "swe/tasks.jsonl", "swe/tasks.validation.json")


def timings(path: Path) -> dict[str, float]:
    return {r["id"]: r["duration_s"] for r in map(json.loads, path.read_text().splitlines())} if path.exists() else {}


def copies_of_row(path: Path) -> Path:
    """COPIES instances of the fixture's one row, each its own instance id, in a file beside it."""
    row = json.loads(path.read_text())
    rows = [row | {"instance_id": f"{row['instance_id']}-{i}"} for i in range(COPIES)]
    out = path.with_name(f"{path.stem}-copies.jsonl")
    out.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return out


def bwrap_smoke_config(prefix: str) -> tuple[str, dict]:
    """A fresh run name and the smoke config under it, in bwrap."""
    name = f"{prefix}-{uuid.uuid4().hex[:8]}"
    config = yaml.safe_load((ROOT / "configs/config.yaml").read_text())
    config["run"], config["sandbox"] = name, "bwrap"
    return name, config


@pytest.fixture
def runs(swe_data, tmp_path):
    """Two run names and their configs: the smoke corpus cut to one synthetic repository, with COPIES instances of
    the SWE-rebench-V2 row (each its own instance id), validated with bwrap."""
    root, _ = swe_data
    copies = copies_of_row(root / "rebench-v2.jsonl")
    out = []
    for _ in range(2):
        name, config = bwrap_smoke_config("long-corpus")
        config["tasks"]["synthetic"] |= {"languages": ["python"], "repos_per_language": 1, "variants": ["fail"]}
        config["tasks"]["registry"] = {"enabled": False}
        swe = {"enabled": True, "dataset": str(copies), "validate": True, "concurrency": 1}
        config["tasks"]["swe"] = swe
        (tmp_path / f"{name}.yaml").write_text(yaml.safe_dump(config))
        out.append((ROOT / "results" / name, tmp_path / f"{name}.yaml"))
    yield out
    for folder, _ in out:
        shutil.rmtree(folder, ignore_errors=True)


def tasks_rule(folder: Path, config: Path) -> list[str]:
    options = ["--configfile", str(config), "--cores", "1", "--allowed-rules", "tasks", "--rerun-triggers=mtime"]
    return [sys.executable, "-m", "snakemake", *options, f"results/{folder.name}/tasks/tasks.jsonl"]


@pytest.mark.skipif(bwrap_path() is None, reason="bubblewrap is not installed")
@pytest.mark.timeout(600)
def test_a_tasks_job_killed_while_validating_and_rerun_checks_no_instance_twice(runs):
    (folder, config), (reference, reference_config) = runs
    swe = folder / "tasks" / "swe"
    part = swe / "tasks.validation.progress.jsonl.part"
    sidecar = swe / "tasks.validation.progress.timings.jsonl"
    env = {**os.environ, "PATH": f"{BIN}:{os.environ['PATH']}"}
    first = subprocess.Popen(
        tasks_rule(folder, config), cwd=ROOT, env=env, start_new_session=True, stdout=subprocess.PIPE, text=True
    )
    deadline = time.time() + 300
    while time.time() < deadline and lines_done(part) < 2:
        assert first.poll() is None, first.stdout.read()[-2000:]
        time.sleep(0.05)
    assert kill_job(first.pid, "terminus tasks build") > 0
    text = first.communicate(timeout=120)[0]
    assert first.returncode != 0, text[-3000:]
    assert not (folder / "tasks" / "tasks.jsonl").exists()
    before = timings(sidecar.with_name(sidecar.name + ".part"))
    done = {json.loads(line)["instance_id"] for line in part.read_text().splitlines() if line.endswith("}")}
    assert 2 <= len(done) < COPIES and set(before) >= done

    again = subprocess.run(tasks_rule(folder, config), cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert again.returncode == 0, (again.stdout + again.stderr)[-3000:]
    after = timings(sidecar)
    # each check's duration is wall clock: an instance checked again would have another
    assert len(after) == COPIES and all(after[i] == before[i] for i in done)
    assert not part.exists() and not (swe / "tasks.validation.progress.jsonl").exists()

    uninterrupted = subprocess.run(
        tasks_rule(reference, reference_config), cwd=ROOT, env=env, capture_output=True, text=True, timeout=600
    )
    assert uninterrupted.returncode == 0, (uninterrupted.stdout + uninterrupted.stderr)[-3000:]
    assert json.loads((folder / "tasks/swe/tasks.validation.json").read_text())["kept"] == COPIES
    for name in OUTPUTS:
        resumed, whole = (folder / "tasks" / name).read_text(), (reference / "tasks" / name).read_text()
        assert resumed.replace(folder.name, "<run>") == whole.replace(reference.name, "<run>"), name


@pytest.fixture
def pro_runs(swe_data, tmp_path):
    """Two run names and their configs whose grid is one SWE-Bench Pro cell over COPIES instances of the fixture's
    row (each its own instance id), with a scripted subagent, in bwrap; a one-task corpus as the validated tasks."""
    root, _ = swe_data
    copies = copies_of_row(root / "pro.jsonl")
    out = []
    for _ in range(2):
        name, config = bwrap_smoke_config("long-pro")
        config["eval"]["benchmarks"] = ["swebench-pro"]
        config["eval"]["subagents"] = [{"name": "scripted", "policy": "scripted"}]
        config["eval"]["swe"] = {"datasets": {"swebench-pro": str(copies)}, "timeout_s": 600}
        (tmp_path / f"{name}.yaml").write_text(yaml.safe_dump(config))
        tasks = ROOT / "results" / name / "tasks"
        tasks.mkdir(parents=True)
        for file in ("valid.jsonl", "valid.validation.trajectories.jsonl"):
            (tasks / file).write_text("")
        out.append((ROOT / "results" / name, tmp_path / f"{name}.yaml"))
    yield out
    for folder, _ in out:
        shutil.rmtree(folder, ignore_errors=True)


@pytest.mark.skipif(bwrap_path() is None, reason="bubblewrap is not installed")
@pytest.mark.timeout(900)
def test_a_swebench_pro_cell_killed_mid_run_and_rerun_redoes_no_finished_instance(pro_runs):
    (folder, config), (reference, reference_config) = pro_runs
    cell = "reader__scripted__full__swebench-pro__0"
    records = f"eval/cells/{cell}.jsonl"
    part = folder / (records + ".part")
    env = {**os.environ, "PATH": f"{BIN}:{os.environ['PATH']}"}

    def rule(run: Path, cfg: Path) -> list[str]:
        options = ["--configfile", str(cfg), "--cores", "2", "--allowed-rules", "eval_cell", "--rerun-triggers=mtime"]
        return [sys.executable, "-m", "snakemake", *options, f"results/{run.name}/{records}"]

    def wall(path: Path) -> dict[str, float]:
        complete = [line for line in path.read_text().splitlines() if line.endswith("}")]  # not one a kill cut
        return {r["key"]: r["wall_s"] for r in map(json.loads, complete)}

    first = subprocess.Popen(rule(folder, config), cwd=ROOT, env=env, start_new_session=True, stdout=subprocess.PIPE)
    deadline = time.time() + 600
    while time.time() < deadline and lines_done(part) < 2:
        assert first.poll() is None, first.stdout.read()[-2000:]
        time.sleep(0.05)
    assert kill_job(first.pid, "terminus eval") > 0
    first.communicate(timeout=120)
    assert first.returncode != 0 and not (folder / records).exists()
    before = wall(part)
    assert 2 <= len(before) < COPIES

    again = subprocess.run(rule(folder, config), cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    assert again.returncode == 0, (again.stdout + again.stderr)[-3000:]
    after = wall(folder / records)
    assert len(after) == COPIES and all(after[key] == value for key, value in before.items())  # none run again
    print(f"swebench-pro cell: {len(before)} of {COPIES} instances kept through the kill")

    uninterrupted = subprocess.run(
        rule(reference, reference_config), cwd=ROOT, env=env, capture_output=True, text=True, timeout=900
    )
    assert uninterrupted.returncode == 0, (uninterrupted.stdout + uninterrupted.stderr)[-3000:]
    for name in (records, f"eval/predictions/{cell}.jsonl"):
        lines = [table_lines(run / name, str(run)) for run in (folder, reference)]
        stamped = [json.loads(run_lines[0]).get("config_hash", "") for run_lines in lines]
        runs_named = [(run.name, h) for run, h in zip((folder, reference), stamped, strict=True)]
        normalised = [
            [line.replace(f'"run": "{n}"', '"run": "<run>"').replace(h or "<none>", "<config>") for line in run_lines]
            for (n, h), run_lines in zip(runs_named, lines, strict=True)
        ]
        assert normalised[0] == normalised[1], name
