"""SWE-family benchmarks as grid cells: the main agent works on the instance, its edits become a patch, the
official rule grades it, and the cell writes predictions in SWE-bench's format; the main agent's tools work inside
an image, where the repository is not on the host."""

from __future__ import annotations

import copy
import json

import pytest

from terminus.config import refill
from terminus.eval.grid import run_cell
from terminus.judge.scorer import Scorer
from terminus.runspec import RunSpec, load_run
from terminus.sandbox.bwrap import bwrap_path
from terminus.sandbox.spec import SandboxSpec
from terminus.swe import grade_patch, load_instances

needs_bwrap = pytest.mark.skipif(bwrap_path() is None, reason="bubblewrap is not installed")


@needs_bwrap
def test_a_swe_cell_grades_what_the_main_agent_submitted(swe_data, tmp_path):
    root, _ = swe_data
    run = load_run("configs/config.yaml", sandbox="bwrap")
    config = copy.deepcopy(run.config)
    config["eval"] |= {
        "benchmarks": ["swebench-verified"],
        "concurrency": 1,
        "subagents": [{"name": "none", "policy": "none"}, {"name": "scripted", "policy": "scripted"}],
        "swe": {"datasets": {"swebench-verified": str(root / "verified.jsonl")}, "limit": 1, "timeout_s": 600},
    }
    run = RunSpec(refill(config), run.sandbox)  # the new subagents' defaults (their tool_call_limit)
    (inst,) = load_instances("swebench-verified", dataset=str(root / "verified.jsonl"), limit=1)
    out = tmp_path / "eval"
    for cell in ("reader__none__full__swebench-verified__0", "reader__scripted__full__swebench-verified__0"):
        (record,) = run_cell(run, root / "unused.jsonl", out, Scorer(tasks={}), cell, show_progress=False)
        assert record["task_id"] == inst.instance_id and record["benchmark"] == "swebench-verified"
        assert set(record["fail_to_pass"]) == {"passed", "failed"} and record["main_agent_turns"] > 0
        # what the cell recorded is the official grading of the patch it submitted
        regraded = grade_patch(inst, record["model_patch"], SandboxSpec("bwrap"))
        assert record["resolved"] == float(regraded.resolved)
        assert record["fail_to_pass"] == regraded.report()["fail_to_pass"]
        (prediction,) = [json.loads(line) for line in (out / "predictions" / f"{cell}.jsonl").read_text().splitlines()]
        assert set(prediction) == {"instance_id", "model_name_or_path", "model_patch"}
        assert prediction["instance_id"] == inst.instance_id and isinstance(prediction["model_patch"], str)
    scripted = json.loads((out / "cells" / "reader__scripted__full__swebench-verified__0.jsonl").read_text())
    assert scripted["subagent_calls"] >= 1  # the main agent delegated inside the instance's environment


@pytest.mark.docker
def test_main_agent_tools_work_inside_an_image(docker_engine):
    """In an image the repository is at the image's path: files are read and edited through the container, and
    the subagent runs in it too, seeing the edit."""
    from terminus.mainagent.harness import MainAgentResult
    from terminus.mainagent.instance import AtWorkdir, InstanceWorkbench
    from terminus.models import make_policy
    from terminus.sandbox import make_sandbox

    spec = SandboxSpec("docker", docker_url=docker_engine)
    with make_sandbox(spec, None) as box:
        setup = box.run("mkdir -p /tmp/app && printf 'total = 1 + 1\\nprint(total)\\n' > /tmp/app/calc.py", 30)
        assert setup.exit_code == 0, setup.output
        bench = InstanceWorkbench(AtWorkdir(box, "/tmp/app"), spec, make_policy("scripted"), 10)
        result = MainAgentResult(main_agent="test")
        assert "total = 1 + 1" in bench.call("read_file", {"path": "calc.py"}, result, "p")
        assert bench.call("read_file", {"path": "../etc/passwd"}, result, "p").startswith("error")
        assert bench.call("edit_file", {"path": "calc.py", "old": "1 + 1", "new": "2 + 2"}, result, "p") == "ok"
        assert "2 + 2" in box.run("cat /tmp/app/calc.py", 30).output
        assert "/tmp/app" in bench.call("run_in_terminal", {"command": "pwd", "timeout_ms": 5000}, result, "p")
        answer = bench.call(
            "execution_subagent", {"query": "show me calc.py", "description": "check the edit"}, result, "p"
        )
        assert result.subagent_calls == 1 and answer
        commands = result.subagent_episodes[0]["commands"]
        assert commands and "/tmp/app" in result.subagent_episodes[0]["trajectory"]["messages"][0]["content"]
