"""The GPU check is ready for a GPU: its dry run builds Qwen3-4B's exact shape (on the meta device) and Qwen's
tokenizer with Qwen3's ids, parses the paper recipe with its overrides, builds the corpus and the eval cell."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def test_gpu_check_dry_run_validates_everything_without_a_gpu():
    done = subprocess.run(
        [sys.executable, str(ROOT / "scripts/gpu_check.py"), "--dry-run"], capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stderr[-3000:]
    plan = json.loads(done.stdout[done.stdout.index("{") :])
    assert plan["architecture"]["parameters"] == 4_022_468_096
    assert plan["architecture"]["vocab"] == 151_669 and plan["architecture"]["tool_call_id"] == 151_657
    assert plan["vllm_mode"] == "colocate" and plan["num_generations"] == 8 and plan["max_new_tokens"] == 1024
    assert plan["eval_cells"] == ["reader__qwen3-4b-random__full__execution__0"]
    assert not (ROOT / "results/benchmarks/gpu_check.json").exists() or "dry_run" not in json.loads(
        (ROOT / "results/benchmarks/gpu_check.json").read_text()
    )


def gpu_check_module():
    import importlib.util

    spec = importlib.util.spec_from_file_location("gpu_check", ROOT / "scripts/gpu_check.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_json_is_written_after_every_step_and_a_failed_step_keeps_the_others(tmp_path):
    out = tmp_path / "gpu_check.json"
    seen = []

    def first(result):
        return {"tokens_per_s": 10.0}

    def second(result):
        seen.append(json.loads(out.read_text()))  # what a job cut off here would have left
        raise RuntimeError("vLLM refused to start")

    def third(result):
        seen.append(json.loads(out.read_text()))
        return {"episodes": 16}

    result = gpu_check_module().run_steps([("a", first), ("b", second), ("c", third)], {"gpu": "X"}, out)
    assert seen[0]["a"]["tokens_per_s"] == 10.0 and "b" not in seen[0]
    assert seen[1]["b"]["error"] == "RuntimeError: vLLM refused to start"
    assert json.loads(out.read_text()) == result and result["c"]["episodes"] == 16
    assert all("step_wall_s" in result[name] for name in "abc")


def test_a_step_whose_estimate_exceeds_the_budget_left_is_skipped_with_the_reason(tmp_path):
    import time

    out = tmp_path / "device_check.json"
    steps = [("quick", lambda result: {"ran": True}), ("long", lambda result: {"ran": True})]
    deadline = time.perf_counter() + 60
    result = gpu_check_module().run_steps(steps, {}, out, deadline=deadline, estimates={"quick": 1, "long": 600})
    assert result["quick"]["ran"] and "ran" not in result["long"]
    assert result["long"]["skipped"].startswith("needs ~600 s,") and result["long"]["estimate_s"] == 600
    assert json.loads(out.read_text()) == result


def test_the_served_cells_memory_fraction_fits_beside_what_is_held():

    from terminus.models.serve import ServeError, memory_fraction

    gib = 2**30
    assert memory_fraction(141 * gib, 141 * gib) == 0.9  # a GPU of its own: vLLM's default
    held = memory_fraction(111 * gib, 141 * gib)  # 30 GiB still held after GRPO
    assert held == 0.773 and held * 141 <= 111 - 2  # vLLM's whole share fits in what is free, with headroom
    with pytest.raises(ServeError, match=r"only 3\.0 of 80\.0 GiB"):
        memory_fraction(3 * gib, 80 * gib)
    config = gpu_check_module().eval_config("MODEL", 16, held)
    assert config["eval"]["subagents"][0]["gpu_memory_utilization"] == held
