"""`scorer_from_config`: the one way `terminus judge`, `eval` and GRPO build their Scorer from the config."""

from __future__ import annotations

from pathlib import Path

import yaml
from typer.testing import CliRunner

from builders import cli_args, snapshot_task
from terminus.cli import app
from terminus.config import load_config
from terminus.judge.setup import scorer_from_config
from terminus.tasks.record import write_tasks


def _config(tmp_path, **judge) -> Path:
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump({"run": "scorersetup", "tasks": {}, "judge": judge}))
    return path


def test_the_scorer_follows_the_config_and_a_caller_may_pin_group(tmp_path):
    weights = tmp_path / "scorer.yaml"
    weights.write_text(yaml.safe_dump({"weights": {"judge": 0.0, "fact_recall": 0.7, "fact_precision": 0.3}}))
    cfg = load_config(_config(tmp_path, group=True, scorer=str(weights)))
    task = snapshot_task(tmp_path, "r0", {"README.md": "x\n"})
    refs = {task.id: {"task_id": task.id}}
    with scorer_from_config(cfg, {task.id: task}, tmp_path / "cache", references=refs) as scorer:
        assert scorer.group is True and scorer.judge is None  # no endpoint, no serve: fact checker only
        assert scorer.config.fact_recall == 0.7 and scorer.references == refs
    with scorer_from_config(cfg, {task.id: task}, tmp_path / "cache", group=False) as scorer:
        assert scorer.group is False and scorer.references == {}


def test_a_bad_scorer_config_ends_the_judge_command_in_one_line(tmp_path):
    weights = tmp_path / "scorer.yaml"
    weights.write_text(yaml.safe_dump({"weights": {"vibes": 1.0}}))
    tasks, trajectories = tmp_path / "tasks.jsonl", tmp_path / "trajectories.jsonl"

    write_tasks(tasks, [snapshot_task(tmp_path, "r0", {"README.md": "x\n"})])
    trajectories.write_text("")
    config = _config(tmp_path, scorer=str(weights))
    inputs = {"trajectories": trajectories, "tasks": tasks, "out": tmp_path / "verdicts.jsonl", "config": config}
    result = CliRunner().invoke(app, cli_args("judge", **inputs))
    assert result.exit_code == 2, result.output
    assert result.output.strip() == f"error: {weights}: weights.vibes: unknown key (not a setting of this section)"
    assert not (tmp_path / "verdicts.jsonl").exists()
