"""`terminus judge` against an endpoint that never answers (issue 16): the config's or the flags' limits bound it,
and it ends in one line."""

from __future__ import annotations

import time

import pytest
import yaml
from typer.testing import CliRunner

from builders import cli_args, snapshot_task
from terminus.cli import app
from terminus.collect.collect import collect
from terminus.models import make_policy
from terminus.sandbox.spec import SandboxSpec
from terminus.tasks.record import write_tasks


@pytest.mark.timeout(90)
def test_judge_calls_are_bounded_by_the_flags(fault_endpoint, tmp_path):
    tasks = tmp_path / "tasks.jsonl"
    write_tasks(tasks, [snapshot_task(tmp_path, "r0", {"README.md": "x\n"})])
    trajectories = tmp_path / "trajectories.jsonl"
    collect(
        tasks,
        make_policy("scripted"),
        trajectories,
        splits=("train",),
        sandbox=SandboxSpec("local"),
        max_turns=10,
        concurrency=4,
        show_progress=False,
    )
    config = tmp_path / "config.yaml"
    endpoint = {"base_url": fault_endpoint.url, "model": "tiny"}
    config.write_text(yaml.safe_dump({"run": "judgelimits", "tasks": {}, "judge": {"endpoint": endpoint}}))
    fault_endpoint.script = ["never"]
    start = time.monotonic()
    inputs = {"trajectories": trajectories, "tasks": tasks, "out": tmp_path / "verdicts.jsonl", "config": config}
    result = CliRunner().invoke(app, cli_args("judge", **inputs, request_timeout=1, max_retries=1))
    elapsed = time.monotonic() - start
    assert result.exit_code == 2, result.output
    assert result.output.startswith("error: judge:") and "did not answer within 1 s" in result.output
    assert len(result.output.strip().splitlines()) == 1
    assert len(fault_endpoint.arrivals) == 2 and elapsed < 15
