"""The GPU check is ready for a GPU: its dry run builds Qwen3-4B's exact shape (on the meta device) and Qwen's
tokenizer with Qwen3's ids, parses the paper recipe with its overrides, builds the corpus and the eval cell."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

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
    assert plan["eval_cells"] == ["reader__qwen3-4b-random__execution__0"]
    assert not (ROOT / "results/benchmarks/gpu_check.json").exists() or "dry_run" not in json.loads(
        (ROOT / "results/benchmarks/gpu_check.json").read_text()
    )
