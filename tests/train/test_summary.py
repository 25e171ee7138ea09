"""`terminus training-summary` runs its models through the policy eval uses: `vllm` serves each model once for its
held-out episodes (which call it concurrently), `transformers` loads it in the process; both give the summary."""

from __future__ import annotations

import json
import subprocess

import pytest

from builders import TERMINUS, cli_args, synthetic_corpus
from terminus.tasks.record import load_tasks


@pytest.fixture(scope="module")
def held_out(tmp_path_factory):
    root = tmp_path_factory.mktemp("summary")
    synthetic = {"languages": ["python"], "repos_per_language": 2, "variants": ["fail"], "verbose_lines": 0}
    tasks = synthetic_corpus(root, synthetic, {"train": 0.0, "val": 0.0, "test": 1.0}, sandbox="local")
    (root / "metrics.jsonl").write_text("".join(json.dumps({"step": s, "reward": s / 10}) + "\n" for s in (1, 2)))
    return tasks


@pytest.mark.slow
@pytest.mark.parametrize("policy", ["vllm", "transformers"])
def test_the_held_out_summary_runs_its_models_through_the_policy_eval_uses(held_out, tiny_model, tmp_path, policy):
    if policy == "vllm":
        pytest.importorskip("vllm")
    out = tmp_path / "training" / "summary.json"
    options = {
        "base": tiny_model,
        "sft": tiny_model,
        "grpo": tiny_model,
        "grpo_metrics": held_out.parent / "metrics.jsonl",
    }
    argv = cli_args("training-summary", tasks=held_out, out=out, config=held_out.parent / "config.yaml", **options)
    done = subprocess.run(
        [TERMINUS, *argv, "--max-new-tokens", "24", "--max-turns", "2", "--policy", policy, "--concurrency", "4"],
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    summary = json.loads(out.read_text())
    test_tasks = [t for t in load_tasks(held_out) if t.split == "test"]
    assert all(summary[name]["n"] == len(test_tasks) for name in ("base", "sft", "grpo"))
    assert summary["grpo"]["steps"] == 2
    served = sorted(p.name for p in (out.parent / "logs").glob("vllm-*.log"))
    assert served == (["vllm-base.log", "vllm-grpo.log", "vllm-sft.log"] if policy == "vllm" else [])


def test_an_unknown_policy_is_refused_in_one_line(held_out, tmp_path):
    argv = cli_args(
        "training-summary", tasks=held_out, base="b", sft="s", grpo="g", grpo_metrics="m", out=tmp_path / "s"
    )
    done = subprocess.run([TERMINUS, *argv, "--policy", "openai"], capture_output=True, text=True, timeout=120)
    assert done.returncode != 0 and done.stderr.strip().splitlines() == [
        "error: --policy openai: choose transformers or vllm"
    ]
