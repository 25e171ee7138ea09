"""A task whose image does not exist fails its own episodes, never the batch or the stage: in the private docker
engine, among tasks that run, GRPO's lockstep rollout returns infra-failed episodes for it (and skips it after two
failed starts, a list its resume reads back) and finishes the others; the collect stage records and counts it."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest
from typer.testing import CliRunner

from builders import synthetic_corpus
from terminus.cli import app
from terminus.collect.collect import collect
from terminus.collect.lockstep import run_lockstep
from terminus.collect.runner import start_failed
from terminus.models import make_policy
from terminus.models.generate import TransformersGenerator
from terminus.models.local import load_transformers
from terminus.sandbox import pull as pull_module
from terminus.sandbox.spec import SandboxSpec
from terminus.tasks.record import load_tasks, write_tasks
from terminus.train import infra
from terminus.train.rollout import episode_calls

pytestmark = pytest.mark.docker

# a registry on loopback where nothing listens: the pull is tried (3 times) and fails at once, offline
ABSENT = "127.0.0.1:9/terminus-no-such-image:1"


@pytest.fixture
def corpus(tmp_path, docker_engine, monkeypatch) -> tuple[Path, str, SandboxSpec]:
    """Two synthetic projects' tasks, one of them (the broken one) in an image no registry has; the run's spec."""
    monkeypatch.setattr(pull_module, "PULL_BACKOFF_S", 0.0)
    monkeypatch.setattr(pull_module, "_failed", {})
    synthetic = {"languages": ["python"], "repos_per_language": 2, "variants": ["pass", "fail"]}
    tasks_file = synthetic_corpus(tmp_path, synthetic, {"train": 1.0, "val": 0.0, "test": 0.0})
    tasks = load_tasks(tasks_file)
    tasks[0].image = ABSENT
    write_tasks(tasks_file, tasks)
    return tasks_file, tasks[0].id, SandboxSpec("docker", docker_url=docker_engine, pull="missing")


def test_lockstep_rollouts_fail_the_broken_tasks_episodes_alone(corpus, tiny_model, tmp_path):
    tasks_file, broken, spec = corpus
    tasks = {t.id: t for t in load_tasks(tasks_file)}
    ids = [broken, *(t for t in tasks if t != broken), broken]  # two episodes of the broken task in one batch
    episodes = episode_calls(tasks, tasks_file, SimpleNamespace(max_turns=2), spec, ids, "0")
    model, tokenizer = load_transformers(str(tiny_model))
    run = run_lockstep(episodes, TransformersGenerator(model, tokenizer, max_new_tokens=16), name="grpo-policy")

    records = [t.to_dict() for t in run.trajectories]
    assert [r["task_id"] for r in records] == ids
    failures = [infra.infra_failure(r) for r in records]
    for record, failure in zip(records, failures, strict=True):
        if record["task_id"] == broken:
            assert start_failed(record) and failure.startswith("TaskStartError: task ")
            assert ABSENT in failure and "after 3 tries" in failure
        else:  # ran to its end in its container, with the model's replies
            assert failure is None and record["termination"] != "crash"
            assert any(m["role"] == "assistant" for m in record["messages"])
    # two failed starts: skipped for the rest of the run, listed, and read back by a resumed run
    skips = infra.TaskSkips(tmp_path / "grpo")
    (tmp_path / "grpo").mkdir()
    for task_id, record in zip(ids, records, strict=True):
        skips.saw(task_id, record)
    assert list(skips.skipped) == [broken]
    listed = json.loads((tmp_path / "grpo" / infra.SKIPPED_FILE).read_text())["skipped"]
    assert list(listed) == [broken] and ABSENT in listed[broken]
    assert infra.TaskSkips(tmp_path / "grpo").skipped == listed


def test_collect_records_and_counts_a_task_that_does_not_start(corpus, tmp_path):
    tasks_file, broken, spec = corpus
    out = tmp_path / "traj.jsonl"
    records = collect(
        tasks_file, make_policy("scripted"), out, sandbox=spec, max_turns=10, concurrency=2, show_progress=False
    )
    by_task = {r["task_id"]: r for r in records}
    assert len(by_task) == len(load_tasks(tasks_file))
    assert start_failed(by_task[broken]) and ABSENT in by_task[broken]["error"]
    assert all(r["termination"] == "final_answer" for t, r in by_task.items() if t != broken)
    # the file holds them all; the failed start stays in the part file, so that a rerun retries it alone
    assert len(out.read_text().splitlines()) == len(records) and out.with_name(out.name + ".part").is_file()


def test_the_collect_command_counts_it_and_succeeds_while_other_tasks_ran(corpus, tmp_path, monkeypatch):
    tasks_file, _, spec = corpus
    monkeypatch.setenv("DOCKER_HOST", spec.docker_url)  # the command's engine: DOCKER_HOST, as on a node
    out = tmp_path / "cli.jsonl"
    args = ["collect", "--tasks", str(tasks_file), "--out", str(out), "--sandbox", "docker", "--pull", "never"]
    result = CliRunner().invoke(app, [*args, "--quiet"])
    assert result.exit_code == 0, result.output
    assert "1 did not start, a rerun retries them; first: TaskStartError: task " in result.output
    assert "pulling is off (sandbox_pull: never / --pull never)" in result.output
