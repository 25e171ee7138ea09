"""Does the smoke config's GRPO keep what SFT taught? Its training summaries on several seeds (the smoke run and
`snakemake results/smoke-S/training/summary.json --config seed=S run=smoke-S`): each model's held-out final-answer
rate and fact recall, and whether GRPO's final-answer rate is at least SFT's on every seed.

    python benchmarks/smoke_seeds.py --runs results/smoke results/smoke-1 results/smoke-2

Writes results/benchmarks/smoke_seeds.json: {"runs": [{"run", "seed", "base", "sft", "grpo"}], "grpo_keeps_sft"}.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import yaml

from benchmark_result import write_result
from terminus.config import ROOT

KEYS = ("final_answer_rate", "fact_recall", "n")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=Path, nargs="+", required=True, help="Run folders of the smoke config.")
    args = ap.parse_args()
    rows = []
    for run in args.runs:
        path = run / "training" / "summary.json"
        if not path.is_file():
            raise SystemExit(f"{path} is missing: run that seed's training summary first")
        summary = json.loads(path.read_text())
        # a run with --config overrides has its merged config beside it; the smoke run itself is the default's
        merged = run / "config.yaml"
        config = yaml.safe_load((merged if merged.is_file() else ROOT / "configs" / "config.yaml").read_text())
        rows.append({"run": summary.get("run", run.name), "seed": config.get("seed", 0),
                     **{m: {k: summary[m][k] for k in KEYS} for m in ("base", "sft", "grpo")},
                     "grpo_steps": summary["grpo"]["steps"], "git_commit": summary.get("git_commit")})  # fmt: skip
    keeps = all(r["grpo"]["final_answer_rate"] >= r["sft"]["final_answer_rate"] for r in rows)
    write_result("smoke_seeds", {"runs": rows, "grpo_keeps_sft": keeps})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
