"""The corpus stage with the SWE selection runs past one slurm job at paper scale (16-78 h): `rule tasks` killed -9
while it validates the instances in their sandboxes, and run again, checks only the instances the first job had not,
and writes the corpus an uninterrupted run writes, byte for byte."""

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
from terminus.sandbox.bwrap import bwrap_path

BIN = str(Path(sys.executable).parent)
COPIES = 4
OUTPUTS = ("tasks.jsonl", "tasks.stats.json", "swe/tasks.jsonl", "swe/tasks.validation.json")


def timings(path: Path) -> dict[str, float]:
    return {r["id"]: r["duration_s"] for r in map(json.loads, path.read_text().splitlines())} if path.exists() else {}


@pytest.fixture
def runs(swe_data, tmp_path):
    """Two run names and their configs: the smoke corpus cut to one synthetic repository, with COPIES instances of
    the SWE-rebench-V2 row (each its own instance id), validated with bwrap."""
    root, _ = swe_data
    row = json.loads((root / "rebench-v2.jsonl").read_text())
    rows = [row | {"instance_id": f"{row['instance_id']}-{i}"} for i in range(COPIES)]
    (root / "rebench-copies.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = []
    for _ in range(2):
        name = f"long-corpus-{uuid.uuid4().hex[:8]}"
        config = yaml.safe_load((ROOT / "configs/config.yaml").read_text())
        config["run"], config["sandbox"] = name, "bwrap"
        config["tasks"]["synthetic"] |= {"languages": ["python"], "repos_per_language": 1, "variants": ["fail"]}
        config["tasks"]["registry"] = {"enabled": False}
        swe = {"enabled": True, "dataset": str(root / "rebench-copies.jsonl"), "validate": True, "concurrency": 1}
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
