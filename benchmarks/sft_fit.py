"""Can the SFT pipeline fit what it trains on? The learning run's base model trained by the same SFT main, recipe
and chat template on a few of its training conversations for many epochs, then run through the real loop and
sandbox on those same tasks (greedy), beside the learning run's own SFT model on the same tasks.

A pipeline that is wired right memorises a handful of conversations: its episodes repeat the expert's commands and
answers, and fact recall nears 1. If the overfit model does and the learning run's model does not, the learning
run's low training-task recall is the model's size and its ~1 epoch of data, not the wiring.

    python benchmarks/sft_fit.py --run results/learning-0 [--tasks 16] [--steps 300]

Writes results/benchmarks/sft_fit.json: {run, tasks, steps, epochs, final_loss, overfit: {final_answer_rate,
fact_recall, n}, learning_sft: {...}}.
"""

from __future__ import annotations

import argparse
import random
import tempfile
from pathlib import Path

from benchmark_result import write_result
from terminus.config import git_commit
from terminus.io import read_jsonl
from terminus.sandbox.spec import SandboxSpec
from terminus.settings import TURN_LIMIT
from terminus.train import sft
from terminus.train.evaluate import held_out
from terminus.train.export import export


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--run", type=Path, required=True, help="A learning run folder (results/learning-<seed>).")
    ap.add_argument("--tasks", type=int, default=16, help="Training conversations to fit (a seeded draw).")
    ap.add_argument("--steps", type=int, default=300, help="SFT steps on them (batch 4).")
    ap.add_argument("--recipe", type=Path, default=Path("configs/sft/tiny-learning.yaml"))
    ap.add_argument("--max-new-tokens", type=int, default=256)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    from datasets import DatasetDict, load_from_disk

    for need in ("sft-data/dataset_dict.json", "models/base/config.json", "models/sft-merged/config.json",
                 "tasks/valid.jsonl"):  # fmt: skip
        if not (args.run / need).is_file():
            raise SystemExit(f"--run {args.run}: no {need} (run the learning config's SFT stages first)")
    data = load_from_disk(str(args.run / "sft-data"))["train"]
    originals = sorted({r["task_id"] for r in data if r["id"] == r["task_id"]})  # not the renamed or cut copies
    chosen = set(random.Random(args.seed).sample(originals, min(args.tasks, len(originals))))
    subset = data.filter(lambda r: r["id"] == r["task_id"] and r["task_id"] in chosen)
    epochs = round(args.steps * 4 / len(subset), 1)
    tasks_file = args.run / "tasks" / "valid.jsonl"
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        DatasetDict(train=subset, validation=subset.select(range(2))).save_to_disk(str(tmp / "data"))
        argv = ["--config", str(args.recipe), "--model_name_or_path", str(args.run / "models" / "base"),
                "--dataset_path", str(tmp / "data"), "--output_dir", str(tmp / "sft"), "--max_steps", str(args.steps),
                "--eval_strategy", "no", "--save_strategy", "no", "--report_to", "none", "--logging_steps", "10",
                "--seed", str(args.seed)]  # fmt: skip
        summary = sft.main(*sft.parse(argv))
        export(Path(summary["model"]), tmp / "merged", check_vllm=False)
        losses = [r["loss"] for r in read_jsonl(tmp / "sft" / "metrics.jsonl") if "loss" in r]
        common = {"split": "train", "task_ids": chosen, "max_new_tokens": args.max_new_tokens, "concurrency": 2,
                  "sandbox": SandboxSpec(), "max_turns": TURN_LIMIT}  # fmt: skip
        overfit = held_out(str(tmp / "merged"), tasks_file, tmp / "fit.jsonl", name="overfit", **common)
        learned = str(args.run / "models" / "sft-merged")
        learning = held_out(learned, tasks_file, tmp / "sft.jsonl", name="sft", **common)
    result = {
        "run": str(args.run),
        "git_commit": git_commit(),
        "tasks": len(chosen),
        "steps": args.steps,
        "epochs": epochs,
        "final_loss": round(losses[-1], 4) if losses else None,
        "overfit": overfit,
        "learning_sft": learning,
    }
    write_result("sft_fit", result)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
