"""The easy-reward GRPO check (`terminus.train.easy_reward`) on a trained model: one step of GRPO's own main,
rollout, masks and optimizer per direction (what the policy writes, rewarded shorter and then longer), each measured
on its own samples before and after the step. Writes results/benchmarks/easy_reward.json: {steps, first, last,
margin, passed, directions: {shorter, longer}: {first, last, rise, correlation, rewards, logp_change, passed}};
`benchmarks/learning.py` reads {steps, first, last, passed} from it.

    python benchmarks/easy_reward.py --model results/learning-0/models/sft-merged \
        --tasks results/learning-0/tasks/valid.jsonl [--margin 0.5]
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from benchmark_result import write_result
from terminus.config import git_commit
from terminus.train.easy_reward import easy_reward_check


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", type=Path, required=True, help="A trained model folder (an SFT export).")
    ap.add_argument("--tasks", type=Path, required=True, help="Its validated task file (training split used).")
    ap.add_argument("--recipe", type=Path, default=Path("configs/grpo/tiny-learning.yaml"))
    ap.add_argument("--tasks-per-run", type=int, default=8, help="Training tasks drawn with the seed.")
    margin = "Pearson r of the step's log-probability changes with the rewards, in each direction."
    ap.add_argument("--margin", type=float, default=0.5, help=margin)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    if not (args.model / "config.json").is_file():
        raise SystemExit(f"--model {args.model}: no model folder (config.json) there")
    if not args.tasks.is_file():
        raise SystemExit(f"--tasks {args.tasks}: no such file")
    with tempfile.TemporaryDirectory() as tmp:
        argv = ["--config", str(args.recipe), "--model_name_or_path", str(args.model), "--tasks_file", str(args.tasks),
                "--max_tasks", str(args.tasks_per_run),
                "--spread_candidates", "0", "--before_after_samples", "0", "--seed", str(args.seed),
                "--report_to", "none", "--save_strategy", "no"]  # fmt: skip
        result = easy_reward_check(argv, Path(tmp), args.margin)
    result = {"model": str(args.model), "recipe": str(args.recipe), "git_commit": git_commit(), **result}
    write_result("easy_reward", result)
    return 0 if result["passed"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
