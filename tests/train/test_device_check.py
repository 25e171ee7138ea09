"""The lent-GPU check (scripts/device_check.py) rehearses every phase on CPU at tiny scale, without vLLM, and writes
each phase's figures, or the reason it was skipped, to device_check.json."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PHASES = ["environment", "build", "grpo_synthetic", "grpo_main", "trim", "sft_synthetic"]


def rehearse(out: Path, budget_s: int) -> dict:
    argv = [sys.executable, str(ROOT / "scripts/device_check.py"), "--tiny", "--out", str(out)]
    done = subprocess.run([*argv, "--budget-s", str(budget_s)], capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads((out / "device_check.json").read_text())


def test_a_budget_too_small_skips_every_phase_with_its_reason(tmp_path):
    result = rehearse(tmp_path, 0)
    assert result["mode"] == "tiny" and result["budget_s"] == 0
    for phase in PHASES:
        assert "needs ~" in result[phase]["skipped"] and "budget left" in result[phase]["skipped"], result[phase]


def test_the_tiny_rehearsal_runs_every_phase_on_cpu_without_vllm(tmp_path):
    # ~10-25 s on 2 cores: not marked slow
    result = rehearse(tmp_path, 480)
    assert [p for p in PHASES if "skipped" in result[p] or "error" in result[p]] == []
    assert result["environment"]["vllm_importable"] is False and result["wall_s"] < 480
    lengths = result["grpo_synthetic"]["lengths"]
    assert [v["tokens"] for v in lengths.values()] == [256, 512, 1048]
    for figures in lengths.values():  # a padded micro-batch: transformers hands SDPA an explicit mask
        assert figures["sdpa_calls"]["masked"] > 0 and all(s["grad_norm"] > 0 for s in figures["steps"])
    grpo = result["grpo_main"]
    assert len(grpo["steps"]) == 2 and grpo["loss_mask_tokens"] > 0
    assert all(s["grad_norm"] > 0 for s in grpo["steps"])
    assert result["trim"]["max_abs_logp_diff"] < 1e-4  # trimming changes what a forward costs, not what it computes
    assert result["sft_synthetic"]["max_length"] == 1024 and len(result["sft_synthetic"]["steps"]) == 2
