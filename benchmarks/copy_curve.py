"""Why the copy-the-fact control's SFT model does or does not copy (issue 45): SFT continued from a control run's
last checkpoint for more steps at a constant learning rate, and the teacher-forced accuracy on the answer's fact
tokens after every saved checkpoint, with the real observations and with another conversation's swapped in, by kind
of fact (`number`: a count; `test`: a test id or name; `location`: path:line; `train.probe.copy_diagnostic`). A
model that copies gains on `real` and not on `swapped`; a gap that stays flat while training goes on says that
copying is not being learned at this size and length, not that the fact path is broken (the scripted expert,
which copies, recalls every fact through the same path: `copy_control.per_seed[].expert_recall`).

Writes results/benchmarks/copy_curve.json: {run, start, steps, learning_rate, curve: [{step, fact_tokens, real,
swapped, by_kind}], held_out: {recall, swapped_recall} of the last checkpoint, stamp}.

    python benchmarks/copy_curve.py --run results/copy-0 --steps 1200
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

from benchmark_result import write_result
from copy_control import checkpoints, greedy_pair

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--run", type=Path, default=ROOT / "results" / "copy-0", help="A control run's folder.")
    ap.add_argument("--steps", type=int, default=1200, help="SFT steps beyond the run's last checkpoint.")
    ap.add_argument("--learning-rate", type=float, default=2.0e-3, help="Constant, as the recipe's peak.")
    ap.add_argument("--save-steps", type=int, default=200)
    ap.add_argument("--limit", type=int, default=30, help="Validation conversations per checkpoint.")
    args = ap.parse_args()
    run = args.run.resolve()
    found = checkpoints(run)
    if not found:
        raise SystemExit(f"{run}/models/sft has no checkpoint-* folders: run benchmarks/copy_control.py first")
    start, out = found[-1], run / "diagnostics" / "sft-more"
    command = [str(BIN / "terminus"), "sft", "--recipe", str(ROOT / "configs" / "sft" / "tiny-copy.yaml"),
               "--model-name-or-path", str(start), "--dataset-path", str(run / "sft-data"), "--output-dir", str(out),
               "--max_steps", str(args.steps), "--lr_scheduler_type", "constant", "--warmup_steps", "0",
               "--learning_rate", str(args.learning_rate), "--save_steps", str(args.save_steps),
               "--eval_strategy", "no"]  # fmt: skip
    if not (out / "final" / "config.json").is_file():
        with (run / "logs" / "copy_curve_sft.log").open("w") as log:
            subprocess.run(command, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, check=True)
    curve = [point(start, 0, run, args.limit)]
    later = sorted(out.glob("checkpoint-*"), key=lambda p: int(p.name.split("-")[1]))
    curve += [point(p, int(p.name.split("-")[1]), run, args.limit) for p in later]
    last = later[-1] if later else start
    result = {"run": str(run.relative_to(ROOT)), "start": str(start.relative_to(ROOT)), "steps": args.steps,
              "learning_rate": args.learning_rate, "curve": curve, "held_out": held_out(last, run)}  # fmt: skip
    write_result("copy_curve", result)
    return 0


def point(model: Path, step: int, run: Path, limit: int) -> dict:
    from datasets import load_from_disk
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from terminus.determinism import deterministic_torch
    from terminus.train.probe import copy_diagnostic

    deterministic_torch(0)
    net = AutoModelForCausalLM.from_pretrained(model).eval()
    tokenizer = AutoTokenizer.from_pretrained(model)
    d = copy_diagnostic(net, tokenizer, list(load_from_disk(str(run / "sft-data"))["validation"]), limit=limit)
    return {"step": step, "fact_tokens": d["fact_tokens"], "real": d["fact_token_acc_real"],
            "swapped": d["fact_token_acc_swapped"], "by_kind": d["by_kind"]}  # fmt: skip


def held_out(model: Path, run: Path) -> dict:
    """The model's greedy recall on 48 held-out tasks, as they are and swapped (as copy_control's L1)."""
    from terminus.runspec import load_run

    spec = load_run(run / "config.yaml")
    return greedy_pair(run, model, f"curve_{model.name}", spec.sandbox, spec.cfg.collect.max_turns, tasks=48)


if __name__ == "__main__":
    raise SystemExit(main())
