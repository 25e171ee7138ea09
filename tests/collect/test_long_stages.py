"""A stage longer than one slurm job loses nothing it finished: the job killed mid-run (what slurm does at its time
limit; Snakemake then deletes the job's declared outputs) and run again does only the episodes the first did not,
and its outputs are byte for byte an uninterrupted run's. The episode stages share one mechanism (the `<out>.part`
progress file of terminus.collect.runner, beside the declared output and never one): `rule validate_tasks` proves
it through the real rule; progress made from other inputs starts afresh."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
import yaml

from builders import kill_job, lines_done, synthetic_corpus
from terminus.collect import provenance as prov
from terminus.collect.runner import ResumableJsonl
from terminus.config import ROOT

BIN = str(Path(sys.executable).parent)
OUTPUTS = ("valid.jsonl", "valid.validation.json", "valid.validation.trajectories.jsonl")


def unclocked(path: Path) -> str:
    return re.sub(r" in \d+\.\d+s\b", " in <s>s", path.read_text())


def timings(path: Path) -> dict[str, list]:
    return {r["id"]: r["durations_s"] for r in map(json.loads, path.read_text().splitlines())} if path.exists() else {}


@pytest.fixture
def runs(tmp_path):
    """Two run folders under the repository (where the rules write), each with the same corpus as its tasks stage's
    output, and a config for each."""
    names = [f"long-stage-{uuid.uuid4().hex[:8]}" for _ in range(2)]
    configs = []
    for name in names:
        config = yaml.safe_load((ROOT / "configs/config.yaml").read_text())
        config["run"] = name
        configs.append(tmp_path / f"{name}.yaml")
        configs[-1].write_text(yaml.safe_dump(config))
    first = ROOT / "results" / names[0] / "tasks"
    synthetic = {"languages": ["python"], "repos_per_language": 3, "variants": ["pass", "fail", "missing-dep"]}
    first.mkdir(parents=True)
    synthetic_corpus(first, synthetic)
    shutil.copytree(first, ROOT / "results" / names[1] / "tasks", symlinks=True)
    yield [(ROOT / "results" / name, config) for name, config in zip(names, configs, strict=True)]
    for name in names:
        shutil.rmtree(ROOT / "results" / name, ignore_errors=True)


def validate_rule(folder: Path, config: Path) -> list[str]:
    """The validate_tasks rule alone, on the corpus put in place by hand (the tasks rule is not run)."""
    options = [
        "--configfile",
        str(config),
        "--cores",
        "2",
        "--allowed-rules",
        "validate_tasks",
        "--rerun-triggers=mtime",
    ]
    return [sys.executable, "-m", "snakemake", *options, f"results/{folder.name}/tasks/valid.jsonl"]


@pytest.mark.timeout(600)
def test_a_validate_job_killed_mid_run_and_rerun_redoes_no_finished_episode(runs):
    (folder, config), (reference, reference_config) = runs
    tasks = folder / "tasks"
    part = tasks / "valid.validation.trajectories.jsonl.part"
    timings_part = tasks / "valid.validation.trajectories.timings.jsonl.part"
    total = lines_done(tasks / "tasks.jsonl")
    env = {**os.environ, "PATH": f"{BIN}:{os.environ['PATH']}"}
    command = validate_rule(folder, config)
    first = subprocess.Popen(
        command, cwd=ROOT, env=env, start_new_session=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    deadline = time.time() + 300
    while time.time() < deadline and lines_done(part) < 3:
        assert first.poll() is None, first.stdout.read()[-2000:]
        time.sleep(0.05)
    assert kill_job(first.pid, "terminus tasks validate") > 0
    text = first.communicate(timeout=120)[0]
    assert first.returncode != 0, text[-3000:]
    assert not any((tasks / name).exists() for name in OUTPUTS)  # Snakemake removed (or never had) the outputs
    before = timings(timings_part)
    done = {json.loads(line)["id"] for line in part.read_text().splitlines() if line.endswith("}")}
    assert 3 <= len(done) < total and set(before) >= done

    again = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert again.returncode == 0, (again.stdout + again.stderr)[-3000:]
    after = timings(tasks / "valid.validation.trajectories.timings.jsonl")
    assert len(after) == total
    # durations are wall clock: an episode run again would measure other ones
    kept = [key for key in done if after[key] == before[key]]
    redone = [key for key in after if key not in done]
    assert len(kept) == len(done) and len(redone) == total - len(done), (len(done), len(kept), len(redone))
    assert not part.exists()  # published: the progress file is gone

    uninterrupted = subprocess.run(
        validate_rule(reference, reference_config), cwd=ROOT, env=env, capture_output=True, text=True, timeout=600
    )
    assert uninterrupted.returncode == 0, (uninterrupted.stdout + uninterrupted.stderr)[-3000:]
    for name in OUTPUTS[:2]:  # the tables
        assert (tasks / name).read_bytes() == (reference / "tasks" / name).read_bytes(), name
    # the transcripts hold what the tests printed, their own wall clock among it ("7 passed in 0.25s"), which two
    # uninterrupted runs do not share either
    resumed, whole = (unclocked(folder / "tasks" / OUTPUTS[2]), unclocked(reference / "tasks" / OUTPUTS[2]))
    assert resumed == whole


def test_progress_made_from_other_inputs_starts_afresh_and_a_finished_output_is_refused(tmp_path):
    out = tmp_path / "records.jsonl"
    first = ResumableJsonl(out, provenance={"tasks_sha256": "a"})
    first.add({"id": "x"}, {"id": "x", "durations_s": [1.0]})
    first.close()  # killed here; Snakemake deletes `out` (never written) and the input changes
    changed = ResumableJsonl(out, provenance={"tasks_sha256": "b"})
    assert not changed.done("x") and changed.records == {} and changed.times == {}
    assert json.loads(prov.sidecar(out).read_text()) == {"tasks_sha256": "b"}
    changed.add({"id": "y"})
    changed.close()
    same = ResumableJsonl(out, provenance={"tasks_sha256": "b"})  # resubmitted after a time limit: resumes
    assert same.done("y") and not same.done("x")
    same.finish()
    with pytest.raises(prov.ProvenanceMismatch, match="tasks_sha256: 'b' then, 'c' now"):
        ResumableJsonl(out, provenance={"tasks_sha256": "c"})  # a finished result of other inputs: refused
