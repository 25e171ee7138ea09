"""GRPO never dies from one failure and never learns from one: a task whose sandbox does not start and a judge
endpoint that is killed mid-run fail their episodes alone, which are counted, kept out of the loss, and the run
finishes its steps."""

from __future__ import annotations

import json
import shutil

import pytest

from builders import synthetic_corpus
from terminus.config import ROOT
from terminus.sandbox import pull as pull_module
from terminus.tasks.record import load_tasks, write_tasks
from terminus.train import grpo as grpo_module
from terminus.train.infra import InfraFailureError, InfraGuard

from .helpers import _recipe_argv

SHARES = ("rollout/infra_failed_frac", "rollout/skipped_frac", "rollout/dropped_frac", "judge/unparseable_frac",
          "judge/fallback_frac")  # fmt: skip


def _judge(url: str) -> dict:
    """The fault endpoint as the LLM judge: its replies are final answers, not verdicts (unparseable); no retries
    of a refused connection, so a killed judge fails at once."""
    judge = {"endpoint": {"base_url": url, "model": "tiny"}, "serve": None, "max_retries": 0, "request_timeout": 10}
    return judge | {k: str(ROOT / "configs" / "judge" / f"{k}.yaml") for k in ("rubric", "scorer", "prompts")}


@pytest.mark.slow  # about 80 s on 2 cores
def test_grpo_survives_a_killed_judge_and_a_task_that_does_not_start(tiny_model, fault_endpoint, tmp_path,
                                                                     monkeypatch):  # fmt: skip
    monkeypatch.chdir(tmp_path)  # the judge's cache goes under results/<run>/ of the working folder
    synthetic = {"languages": ["python"], "repos_per_language": 1, "variants": ["pass", "fail"], "verbose_lines": 0}
    (tmp_path / "corpus").mkdir()
    splits = {"train": 1.0, "val": 0.0, "test": 0.0}
    tasks_file = synthetic_corpus(
        tmp_path / "corpus", synthetic, splits, sandbox="local", judge=_judge(fault_endpoint.url)
    )
    # two training tasks on two workspaces: each step's 8 episodes are 4 of each
    lines, tasks = tasks_file.read_text().splitlines(keepends=True), load_tasks(tasks_file)
    keep = [
        0,
        next(i for i, t in enumerate(tasks) if t.workspace_path(tasks_file) != tasks[0].workspace_path(tasks_file)),
    ]
    two = tasks_file.with_name("two.jsonl")
    two.write_text("".join(lines[i] for i in keep))
    tasks_file, tasks = two, load_tasks(two)
    assert [t.split for t in tasks] == ["train", "train"]
    broken = tasks[1]
    steps: list[dict] = []

    def observe(out: dict) -> None:  # after each step's rollout, before its scoring
        steps.append(out)
        if len(steps) == 1:  # the second step's sandboxes for this task find no workspace: they do not start
            path = broken.workspace_path(tasks_file)
            shutil.move(path, path.with_name(path.name + ".gone"))
        if len(steps) == 3:  # the judge dies before the third step is scored
            fault_endpoint.close()

    out = tmp_path / "grpo"
    argv = _recipe_argv(
        "grpo", tiny_model, out, tasks_file=tasks_file, experiment_config=tasks_file.parent / "config.yaml"
    )
    argv += ["--use_llm_judge", "true", "--max_steps", "3", "--per_device_train_batch_size", "8"]
    argv += ["--max_turns", "2", "--max_new_tokens", "24", "--max_completion_length", "512", "--logging_steps", "1"]
    grpo_module.main(*grpo_module.parse(argv), observe=observe)

    rows = [json.loads(x) for x in (out / "metrics.jsonl").read_text().splitlines()]
    rows = [r for r in rows if "rollout/infra_failed_frac" in r]
    assert len(rows) == 3  # every step ran and logged
    shares = [[r[k] for k in SHARES] for r in rows]
    # 8 episodes a step, 4 per task. 1: all judged, every judge reply unparseable (the fact checker scores them);
    # 2: the broken task's 4 fail to start (infra), the other 4 judged; 3: the broken task skipped, the judge dead
    assert shares[0] == [0.0, 0.0, 0.0, 1.0, 1.0]
    assert shares[1] == [0.5, 0.0, 0.5, 0.5, 0.5]
    assert shares[2] == [0.5, 0.5, 1.0, 0.0, 0.0]
    # the skipped task was not run: the third step's batches held the other task's 4 episodes at most
    assert rows[2]["episode/batch_size"] <= 4 < rows[0]["episode/batch_size"]
    # nothing of the third step is in the loss: no token's entropy is counted, the loss is 0, no gradient
    assert rows[2]["entropy"] == 0.0 and rows[2]["loss"] == 0.0 and rows[2]["grad_norm"] == 0.0
    assert rows[1]["entropy"] > 0.0  # while the judged half of the second step was
    # what failed to start or was skipped is placeholders, out of the loss: one pad token each, no loss mask
    for batch in steps[1:]:
        masks = [m for m, t in zip(batch["env_mask"], batch["trajectory"], strict=True) if t["task_id"] == broken.id]
        assert masks == [[0]] * 4
    listed = json.loads((out / "skipped_tasks.json").read_text())["skipped"]
    assert list(listed) == [broken.id] and "TaskStartError" in listed[broken.id]


def test_a_share_over_its_threshold_for_the_window_stops_the_run():
    guard = InfraGuard(4, {"rollout/infra_failed_frac": 0.2, "judge/unparseable_frac": 0.2}, window=2)
    metrics: dict = {k: [] for k in SHARES}
    guard.begin(["TaskStartError: task t: its sandbox did not start"] + [None] * 7)  # 1/8 failed
    guard.finish(metrics, 0)  # a window not yet full is not judged
    guard.begin(["TaskStartError: task t: its sandbox did not start"] * 3 + [None] * 5)  # 3/8: the mean is 0.25
    with pytest.raises(InfraFailureError, match=r"step 2: rollout/infra_failed_frac averaged 0.25 .* threshold 0.2"):
        guard.finish(metrics, 1)
    assert metrics["rollout/infra_failed_frac"] == [0.125, 0.375]
    assert guard.dropped() == [True] * 3 + [False] * 5


@pytest.mark.docker  # about 40 s on 2 cores
def test_grpo_in_docker_skips_a_task_whose_image_does_not_exist_and_its_resume_keeps_skipping_it(
    tiny_model, docker_engine, tmp_path, monkeypatch
):
    """GRPO in the private docker engine, one of its two tasks in an image no registry has (the pull is tried and
    fails): the first step's 4 episodes of that task fail to start, alone; the task is then skipped and listed; the
    run finishes its steps, and a resumed run reads the list back and keeps skipping it."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("DOCKER_HOST", docker_engine)  # the run's engine, as on a node
    monkeypatch.setattr(pull_module, "PULL_BACKOFF_S", 0.0)
    monkeypatch.setattr(pull_module, "_failed", {})
    synthetic = {"languages": ["python"], "repos_per_language": 1, "variants": ["pass", "fail"], "verbose_lines": 0}
    (tmp_path / "corpus").mkdir()
    splits = {"train": 1.0, "val": 0.0, "test": 0.0}
    judge = {k: str(ROOT / "configs" / "judge" / f"{k}.yaml") for k in ("rubric", "scorer", "prompts")}  # no chdir
    tasks_file = synthetic_corpus(
        tmp_path / "corpus", synthetic, splits, sandbox="docker", sandbox_pull="missing", judge=judge
    )
    tasks = load_tasks(tasks_file)
    other = next(t for t in tasks if t.workspace_path(tasks_file) != tasks[0].workspace_path(tasks_file))
    tasks = [tasks[0], other]
    tasks[1].image = "127.0.0.1:9/terminus-no-such-image:1"
    write_tasks(tasks_file, tasks)
    broken = tasks[1].id

    out = tmp_path / "grpo"
    argv = _recipe_argv(
        "grpo", tiny_model, out, tasks_file=tasks_file, experiment_config=tasks_file.parent / "config.yaml"
    )
    argv += ["--per_device_train_batch_size", "8", "--max_turns", "2", "--max_new_tokens", "24"]
    argv += ["--max_completion_length", "512", "--logging_steps", "1", "--save_strategy", "steps", "--save_steps", "1"]
    grpo_module.main(*grpo_module.parse([*argv, "--max_steps", "2"]))
    listed = json.loads((out / "skipped_tasks.json").read_text())["skipped"]
    assert list(listed) == [broken] and "127.0.0.1:9/terminus-no-such-image:1" in listed[broken]

    grpo_module.main(*grpo_module.parse([*argv, "--max_steps", "3"]))  # resumed from checkpoint-2
    rows = [json.loads(x) for x in (out / "metrics.jsonl").read_text().splitlines()]
    shares = [(r["rollout/infra_failed_frac"], r["rollout/skipped_frac"]) for r in rows if "rollout/skipped_frac" in r]
    # step 1: the broken task's 4 episodes did not start; steps 2 and 3 (the resumed run's): skipped, never tried
    assert shares == [(0.5, 0.0), (0.0, 0.5), (0.0, 0.5)]
