"""Does a trained tiny model read what its first command printed? `terminus.train.probe` on model folders: for the
command after the repository listing, greedy accuracy (program, folder, whole command) and the teacher-forced loss
of the expert's command after the real listing and after another project's (the gap is what reading it is worth).
Writes results/benchmarks/learning_probe.json and prints it.

    python benchmarks/learning_probe.py --data results/learning-0/sft-data \
        --model base=results/learning-0/models/base --model sft=results/learning-0/models/sft-merged \
        [--note sft="300 SFT steps"] [--limit 40] [--tasks results/learning-0/tasks/valid.jsonl]

With --tasks, each model also runs the task file's test split through the real loop and sandbox (greedy), and
its final-answer rate and fact recall are recorded under `held_out`, as `training/summary.json` has them.
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from benchmark_result import write_result
from terminus.config import git_commit
from terminus.sandbox.spec import SandboxSpec
from terminus.settings import TURN_LIMIT
from terminus.train.evaluate import held_out
from terminus.train.probe import probe


def _pairs(values: list[str], what: str) -> dict[str, str]:
    pairs = {}
    for value in values:
        name, sep, rest = value.partition("=")
        if not sep or not name or not rest:
            raise SystemExit(f"--{what} {value!r}: expected NAME=VALUE")
        pairs[name] = rest
    return pairs


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", type=Path, required=True, help="An SFT dataset folder (`terminus sft-data --out`).")
    ap.add_argument("--model", action="append", default=[], help="NAME=FOLDER, repeatable.")
    ap.add_argument("--note", action="append", default=[], help="NAME=how that model was trained, repeatable.")
    ap.add_argument("--limit", type=int, default=40, help="Conversations per split.")
    ap.add_argument("--name", default="learning_probe", help="results/benchmarks/<name>.json")
    ap.add_argument("--tasks", type=Path, help="A validated task file: also score each model on its test split.")
    ap.add_argument("--held-out", help="With --tasks: score only these models (NAME,NAME; default all).")
    ap.add_argument("--max-new-tokens", type=int, default=192, help="Per turn, for --tasks (as the learning config).")
    args = ap.parse_args()
    models, notes = _pairs(args.model, "model"), _pairs(args.note, "note")
    if not models:
        raise SystemExit("give at least one --model NAME=FOLDER")
    for name, folder in models.items():
        if not (Path(folder) / "config.json").is_file():
            raise SystemExit(f"--model {name}={folder}: no model folder (config.json) there")
    if args.tasks is not None and not args.tasks.is_file():
        raise SystemExit(f"--tasks {args.tasks}: no such file")
    if not (args.data / "dataset_dict.json").is_file():
        raise SystemExit(f"--data {args.data}: not an SFT dataset folder (no dataset_dict.json)")
    result = {"data": str(args.data), "limit": args.limit, "git_commit": git_commit(), "models": {}}
    for name, folder in models.items():
        result["models"][name] = {"path": str(folder), "note": notes.get(name), **probe(folder, args.data, args.limit)}
        if args.tasks is not None and (not args.held_out or name in args.held_out.split(",")):
            with tempfile.TemporaryDirectory() as tmp:
                episodes = Path(tmp) / "held_out.jsonl"
                turns = TURN_LIMIT
                result["models"][name]["held_out"] = held_out(
                    folder, args.tasks, episodes, sandbox=SandboxSpec(), max_turns=turns, concurrency=2,
                    max_new_tokens=args.max_new_tokens,
                )  # fmt: skip
    write_result(args.name, result)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
