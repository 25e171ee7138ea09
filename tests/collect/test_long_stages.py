"""A stage longer than one slurm job loses nothing it finished: its job killed mid-run (what slurm does at its time
limit; Snakemake then deletes the job's declared outputs) and run again does only the episodes the first did not,
and its outputs are an uninterrupted run's (its tables byte for byte; its transcripts and records wall clock aside).
The episode stages share one mechanism, the `<out>.part` progress file of terminus.collect.runner beside the
declared output and never one: rules validate_tasks, collect and eval_cell prove it through the real rules.
Progress made from other inputs starts afresh."""

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

from builders import kill_job, lines_done, synthetic_corpus
from terminus.collect import provenance as prov
from terminus.collect.runner import ResumableJsonl
from terminus.collect.validate import validate_tasks
from terminus.config import ROOT
from terminus.reproducibility import table_lines
from terminus.sandbox.spec import SandboxSpec

BIN = str(Path(sys.executable).parent)
CELL = "reader__scripted__full__execution__0"
# rule: (its target, the marker of its job's command line, its record file, the tables it writes besides)
STAGES = {
    "validate_tasks": ("tasks/valid.jsonl", "terminus tasks validate", "tasks/valid.validation.trajectories.jsonl",
                       ["tasks/valid.jsonl", "tasks/valid.validation.json"]),
    "collect": ("collect/trajectories.jsonl", "terminus collect", "collect/trajectories.jsonl", []),
    "eval_cell": (f"eval/cells/{CELL}.jsonl", "terminus eval", f"eval/cells/{CELL}.jsonl", []),
}  # fmt: skip


def clocks(records: Path, timings: Path) -> dict[str, tuple]:
    """Each record's wall clock, by key: its timings sidecar's entry and its own wall_s (eval records)."""
    measured = {t["id"]: t for t in map(json.loads, timings.read_text().splitlines())} if timings.exists() else {}
    out = {}
    for line in records.read_text().splitlines():
        if line.endswith("}"):  # a line a kill cut short is no record
            record = json.loads(line)
            key = record.get("key", record.get("id"))
            out[key] = (measured.get(key), record.get("wall_s"))
    return out


@pytest.fixture
def runs(tmp_path):
    """Two run folders under the repository (where the rules write), each with the same corpus as the tasks stage's
    output and as the validated tasks (the expert's trajectories as references) for the stages after
    validate_tasks, and a config for each."""
    names = [f"long-stage-{uuid.uuid4().hex[:8]}" for _ in range(2)]
    configs = []
    for name in names:
        config = yaml.safe_load((ROOT / "configs/config.yaml").read_text())
        config["run"] = name
        configs.append(tmp_path / f"{name}.yaml")
        configs[-1].write_text(yaml.safe_dump(config))
    first = ROOT / "results" / names[0] / "tasks"
    first.mkdir(parents=True)
    synthetic = {"languages": ["python", "node"], "repos_per_language": 3, "variants": ["pass", "fail", "missing-dep"]}
    synthetic_corpus(first, synthetic)
    validate_tasks(
        first / "tasks.jsonl", tmp_path / "valid.jsonl", tmp_path / "valid.validation.json", sandbox=SandboxSpec(),
        max_turns=10, concurrency=4,
    )  # fmt: skip
    shutil.copy(first / "tasks.jsonl", first / "valid.jsonl")
    shutil.copy(tmp_path / "valid.validation.trajectories.jsonl", first / "valid.validation.trajectories.jsonl")
    shutil.copytree(first, ROOT / "results" / names[1] / "tasks", symlinks=True)
    yield [(ROOT / "results" / name, config) for name, config in zip(names, configs, strict=True)]
    for name in names:
        shutil.rmtree(ROOT / "results" / name, ignore_errors=True)


def unclocked(path: Path, run: Path) -> list[str]:
    """A table's lines, wall clock aside (terminus.reproducibility), and the run's own name and config hash (two
    runs of one config but for its `run`) too."""
    lines = table_lines(path, str(run))
    stamped = json.loads(lines[0]).get("config_hash") if path.suffix == ".jsonl" and lines else None
    lines = [line.replace(stamped, "<config>") if stamped else line for line in lines]
    return [line.replace(f'"run": "{run.name}"', '"run": "<run>"') for line in lines]


def stage_rule(rule: str, folder: Path, config: Path, target: str | None = None) -> list[str]:
    """The rule alone, on inputs put in place by hand (the rules before it are not run)."""
    options = ["--configfile", str(config), "--cores", "2", "--allowed-rules", rule, "--rerun-triggers=mtime"]
    return [sys.executable, "-m", "snakemake", *options, f"results/{folder.name}/{target or STAGES[rule][0]}"]


@pytest.mark.timeout(900)
@pytest.mark.parametrize("rule", list(STAGES))
def test_a_job_killed_mid_run_and_rerun_redoes_no_finished_episode(rule, runs):
    (folder, config), (reference, reference_config) = runs
    target, marker, records, tables = STAGES[rule]
    if rule == "validate_tasks":  # its input is the corpus alone
        for run in (folder, reference):
            for name in ("valid.jsonl", "valid.validation.trajectories.jsonl"):
                (run / "tasks" / name).unlink()
    out = folder / records
    part, sidecar = out.with_name(out.name + ".part"), out.with_name(out.stem + ".timings.jsonl")
    env = {**os.environ, "PATH": f"{BIN}:{os.environ['PATH']}"}
    command = stage_rule(rule, folder, config)
    first = subprocess.Popen(
        command, cwd=ROOT, env=env, start_new_session=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    deadline = time.time() + 300
    while time.time() < deadline and lines_done(part) < 2:
        assert first.poll() is None, first.stdout.read()[-2000:]
        time.sleep(0.05)
    assert kill_job(first.pid, marker) > 0
    text = first.communicate(timeout=120)[0]
    assert first.returncode != 0, text[-3000:]
    assert not (folder / target).exists()  # Snakemake removed (or the job never wrote) its declared output
    before = clocks(part, sidecar.with_name(sidecar.name + ".part"))

    again = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert again.returncode == 0, (again.stdout + again.stderr)[-3000:]
    after = clocks(out, sidecar)
    # wall clock: an episode run again would have measured other durations
    kept = [key for key, clock in before.items() if after[key] == clock and clock != (None, None)]
    assert 2 <= len(kept) == len(before) < len(after), (rule, len(before), len(kept), len(after))
    assert not part.exists()  # published: the progress file is gone
    print(f"{rule}: {len(kept)} of {len(after)} episodes kept through the kill, {len(after) - len(kept)} run after it")

    uninterrupted = subprocess.run(
        stage_rule(rule, reference, reference_config), cwd=ROOT, env=env, capture_output=True, text=True, timeout=600
    )
    assert uninterrupted.returncode == 0, (uninterrupted.stdout + uninterrupted.stderr)[-3000:]
    for name in [records, *tables]:  # wall clock aside: fields that measure time, the tests' own "in 0.25s"
        assert unclocked(folder / name, folder) == unclocked(reference / name, reference), name
    for name in tables:
        assert (folder / name).read_bytes() == (reference / name).read_bytes(), name


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


@pytest.mark.slow
@pytest.mark.timeout(1200)
def test_a_judge_job_killed_mid_run_and_rerun_asks_no_answered_call_again(runs, tiny_model):
    """judge_teacher's progress is its call cache (judge/cache, not an output): killed mid-run and run again, it asks
    the served judge (the tiny model through vLLM) only the calls the first job had no answer to."""
    pytest.importorskip("vllm")
    for folder, config in runs:
        raw = yaml.safe_load(config.read_text())
        raw["judge"]["llm_stages"] = ["teacher"]
        config.write_text(yaml.safe_dump(raw))
        shutil.copytree(tiny_model, folder / "models" / "base")
        (folder / "collect").mkdir()
        shutil.copy(folder / "tasks/valid.validation.trajectories.jsonl", folder / "collect/trajectories.jsonl")
    (folder, config), (reference, reference_config) = runs
    cache = folder / "judge" / "cache"
    target = "judge/teacher_verdicts.jsonl"
    env = {**os.environ, "PATH": f"{BIN}:{os.environ['PATH']}"}

    def answered() -> dict[str, int]:
        return {p.name: p.stat().st_mtime_ns for p in cache.rglob("*.json")} if cache.is_dir() else {}

    command = stage_rule("judge_teacher", folder, config, target)
    first = subprocess.Popen(
        command, cwd=ROOT, env=env, start_new_session=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    deadline = time.time() + 600
    while time.time() < deadline and len(answered()) < 3:
        assert first.poll() is None, first.stdout.read()[-2000:]
        time.sleep(0.05)
    assert kill_job(first.pid, "terminus judge") > 0
    assert first.communicate(timeout=120)[0] and first.returncode != 0
    assert not (folder / target).exists()
    before = answered()

    again = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    assert again.returncode == 0, (again.stdout + again.stderr)[-3000:]
    after = answered()
    assert all(after[name] == mtime for name, mtime in before.items())  # not asked again, not written again
    assert len(before) < len(after)
    print(f"judge_teacher: {len(before)} of {len(after)} judge calls kept through the kill")

    uninterrupted = subprocess.run(
        stage_rule("judge_teacher", reference, reference_config, target),
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert uninterrupted.returncode == 0, (uninterrupted.stdout + uninterrupted.stderr)[-3000:]
    assert (folder / target).read_bytes() == (reference / target).read_bytes()
