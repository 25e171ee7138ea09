"""SFT and GRPO as DDP (`accelerate launch`, the workflow's launch when a stage asks several GPUs), here on CPU
over gloo with 2 processes on the tiny model: each rank trains on its own share of the batch, and DDP's all-reduce
keeps their weights equal step by step. Each rank writes a digest of its weights after every step
(tests/train/ddp_run.py): ranks that did not average their gradients would diverge at the first step."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from terminus.config import ROOT

RUNNER = Path(__file__).with_name("ddp_run.py")


def launch(stage: str, out: Path, *argv: str) -> dict[int, list[dict]]:
    digests = out / "digests"
    digests.mkdir(parents=True)
    # `--cpu` alone starts one process (accelerate's simple launcher); --multi_gpu starts 2 through torchrun, and the
    # tiny recipes' use_cpu makes them join over gloo on the CPU
    command = [sys.executable, "-m", "accelerate.commands.launch", "--multi_gpu", "--num_processes", "2",
               "--num_machines", "1", "--mixed_precision", "no", "--dynamo_backend", "no",
               str(RUNNER), stage, str(digests), *argv]  # fmt: skip
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=900, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-6000:]
    return {rank: [json.loads(x) for x in (digests / f"rank{rank}.jsonl").read_text().splitlines()] for rank in (0, 1)}


def check_equal_and_moving(ranks: dict[int, list[dict]], steps: int) -> None:
    assert [r["step"] for r in ranks[0]] == list(range(steps + 1)), ranks
    assert ranks[0] == ranks[1]  # the same weights on both ranks before training and after every step
    assert len({r["digest"] for r in ranks[0]}) == steps + 1  # and each step changed them


def recipe(stage: str, model: Path, out: Path) -> list[str]:
    argv = ["--config", str(ROOT / "configs" / stage / "tiny.yaml"), "--model_name_or_path", str(model)]
    return [*argv, "--output_dir", str(out), "--report_to", "none", "--save_strategy", "no", "--max_steps", "2"]


def test_sft_ranks_hold_equal_weights_after_each_step(tiny_model, sft_data, tmp_path):
    out = tmp_path / "sft"
    argv = [*recipe("sft", tiny_model, out), "--dataset_path", str(sft_data[1]), "--eval_strategy", "no"]
    argv += ["--warmup_steps", "0", "--lr_scheduler_type", "constant"]  # the recipe's warmup starts at 0: no change
    ranks = launch("sft", tmp_path, *argv, "--per_device_train_batch_size", "2", "--logging_steps", "1")
    check_equal_and_moving(ranks, 2)
    assert (out / "final").is_dir() and json.loads((out / "train_summary.json").read_text())["steps"] == 2


def test_grpo_ranks_hold_equal_weights_after_each_step(tiny_model, sft_data, tmp_path):
    """2 ranks x 4 episodes, each rank one whole group of num_generations 4: 2 tasks a step."""
    out = tmp_path / "grpo"
    argv = [*recipe("grpo", tiny_model, out), "--tasks_file", str(sft_data[0]), "--max_turns", "2"]
    argv += ["--max_new_tokens", "24", "--learning_rate", "1e-3", "--beta", "0.0"]
    ranks = launch("grpo", tmp_path, *argv)
    check_equal_and_moving(ranks, 2)
    logs = [json.loads(x) for x in (out / "metrics.jsonl").read_text().splitlines()]
    assert len([row for row in logs if "reward" in row]) == 2
