"""Does the tiny model learn the task? The learning runs' held-out figures, per seed, against the targets.

Reads results/<prefix>-<seed>/training/summary.json for each seed (`make learning` runs configs/learning.yaml once
per seed), writes results/benchmarks/learning.json:

    {"seeds": [0, 1, 2], "per_seed": [{"seed": 0,
       "base": {"final_answer_rate", "fact_recall"}, "sft": {...},
       "grpo": {"final_answer_rate", "fact_recall", "reward_first_quarter", "reward_last_quarter"}}, ...],
     "targets": {name: {"value", "target", "met"}}}

and, with --cache DIR, copies each seed's tables (training summary, SFT and GRPO metrics, held-out episodes' counts)
to DIR/seed-<seed>/ for the training notebook.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from terminus.io import write_json_atomic  # noqa: E402

KEYS = ("final_answer_rate", "fact_recall")


def per_seed(seed: int, summary: dict) -> dict:
    row = {"seed": seed}
    for stage in ("base", "sft", "grpo"):
        row[stage] = {k: summary[stage][k] for k in KEYS}
    row["grpo"]["reward_first_quarter"] = summary["grpo"]["reward_first"]
    row["grpo"]["reward_last_quarter"] = summary["grpo"]["reward_last"]
    return row


def targets(rows: list[dict]) -> dict:
    def mean(stage: str, key: str) -> float:
        return round(statistics.fmean(r[stage][key] for r in rows), 4)

    rises = [r["grpo"]["reward_last_quarter"] - r["grpo"]["reward_first_quarter"] for r in rows]
    spread = statistics.stdev(rises) if len(rises) > 1 else 0.0
    out = {
        "sft_final_answer_rate": {"value": mean("sft", "final_answer_rate"), "target": ">= 0.9"},
        "sft_fact_recall": {"value": mean("sft", "fact_recall"), "target": ">= 0.5"},
        "grpo_final_answer_rate_vs_sft": {
            "value": round(mean("grpo", "final_answer_rate") - mean("sft", "final_answer_rate"), 4),
            "target": ">= 0",
        },
        "grpo_reward_rises_every_seed": {"value": [round(x, 4) for x in rises], "target": "all > 0"},
        "grpo_mean_rise_over_std": {
            "value": {"mean": round(statistics.fmean(rises), 4), "std": round(spread, 4)},
            "target": "mean > std",
        },
    }
    out["sft_final_answer_rate"]["met"] = out["sft_final_answer_rate"]["value"] >= 0.9
    out["sft_fact_recall"]["met"] = out["sft_fact_recall"]["value"] >= 0.5
    out["grpo_final_answer_rate_vs_sft"]["met"] = out["grpo_final_answer_rate_vs_sft"]["value"] >= 0
    out["grpo_reward_rises_every_seed"]["met"] = all(x > 0 for x in rises)
    out["grpo_mean_rise_over_std"]["met"] = statistics.fmean(rises) > spread
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    ap.add_argument("--prefix", default="results/learning", help="Run folders are <prefix>-<seed>.")
    ap.add_argument("--out", type=Path, default=ROOT / "results" / "benchmarks" / "learning.json")
    ap.add_argument("--cache", type=Path, help="Copy each seed's tables to <cache>/seed-<seed>/.")
    args = ap.parse_args()
    rows = []
    for seed in args.seeds:
        run = ROOT / f"{args.prefix}-{seed}"
        summary_path = run / "training" / "summary.json"
        if not summary_path.is_file():
            print(f"{summary_path} is missing: run `make learning` (or that seed's run) first", file=sys.stderr)
            return 2
        rows.append(per_seed(seed, json.loads(summary_path.read_text())))
        if args.cache:
            dest = args.cache / f"seed-{seed}"
            dest.mkdir(parents=True, exist_ok=True)
            for name in ("training/summary.json", "models/sft/metrics.jsonl", "models/grpo/metrics.jsonl",
                         "sft-data/counts.json", "tasks/tasks.stats.json"):  # fmt: skip
                if (run / name).is_file():
                    shutil.copyfile(run / name, dest / name.replace("/", "__"))
    result = {"seeds": args.seeds, "per_seed": rows, "targets": targets(rows)}
    write_json_atomic(args.out, result)
    for row in rows:
        g = row["grpo"]
        print(
            f"seed {row['seed']}: recall base {row['base']['fact_recall']:.2f} -> sft {row['sft']['fact_recall']:.2f} "
            f"-> grpo {g['fact_recall']:.2f}; final answer sft {row['sft']['final_answer_rate']:.2f} "
            f"grpo {g['final_answer_rate']:.2f}; "
            f"reward {g['reward_first_quarter']:.3f} -> {g['reward_last_quarter']:.3f}"
        )
    for name, t in result["targets"].items():
        print(f"{'met ' if t['met'] else 'MISS'} {name}: {t['value']} (target {t['target']})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
