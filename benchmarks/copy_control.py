"""Issue 45's learning controls on the copy-the-fact family (configs/copy-control.yaml, `terminus.tasks.copyfacts`):
experiments that can tell a wiring fault on the fact path from a weak model, because one of them must succeed and
one must fail.

Per seed S (results/copy-S/):
- the pipeline: tasks, the expert's episodes, the tiny model, SFT with a checkpoint every 50 steps
  (`snakemake results/copy-S/models/sft-merged --configfile configs/copy-control.yaml --config seed=S run=copy-S`);
- **L1, the positive control**: the SFT model on the held-out tasks (test split, fresh values) through the real loop
  and sandbox, greedy, once as they are (`sft_recall`) and once with every tool output swapped for another task's
  whose facts share no value (`swapped_recall`, `train.evaluate.SwappedPolicy`); and L0 on the validation
  conversations, teacher-forced accuracy on the answer's fact tokens with real and swapped observations
  (`train.probe.copy_diagnostic`), with its curve over SFT's checkpoints. Target: recall >= 0.8 with swapped recall
  <= 0.1. The scripted expert, which copies what it reads, runs the same tasks both ways (`expert_recall`,
  `expert_swapped_recall`): it must score 1 and 0, or the fault is in the wiring, not the model;
- **L2, GRPO's controls**: from the earliest SFT checkpoint whose greedy recall on 16 validation tasks reaches 0.3,
  32 GRPO steps with the grounded, recall-gated reward (configs/grpo/tiny-copy.yaml), its recall measured before
  and after on 16 held-out test tasks x 8 samples (`recall_before`, `recall_after`, `diff` with its 95% paired
  interval over tasks); then the same run with each group's rewards shuffled (`shuffled_diff`), which must not rise.
  Target: `diff`'s interval above 0 on at least 2 of 3 seeds; `shuffled_diff`'s contains 0.

Writes results/copy-S/control/summary.json per seed and merges `copy_control` and `grpo_control` (each
`per_seed[]` with rates as {mean, lo, hi, n}, and its own `stamp`) and `control_targets` into
results/benchmarks/learning.json (whose top-level `stamp` is the learning runs', benchmarks/learning.py's).
`--check` (`make learning-check`) reruns the seeds given from nothing, in results/copy-check-S/ (removed first),
compares them with the committed learning.json within the tolerances below, exits 1 on a difference, and writes
only results/benchmarks/learning_check.json (its verdict and each part's wall clock from nothing: what the README
says a seed costs), never learning.json. CI does not run it (a seed is too long for CI).

    python benchmarks/copy_control.py --seeds 0 1 2
    python benchmarks/copy_control.py --seeds 0 --check
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

from benchmark_result import RESULTS, write_result
from terminus.collect.provenance import file_sha256
from terminus.determinism import result_stamp
from terminus.io import read_jsonl, write_json_atomic, write_text_atomic
from terminus.stats import mean_interval
from terminus.stats import rate_summary as rate

ROOT = Path(__file__).resolve().parents[1]
CONFIG = ROOT / "configs" / "copy-control.yaml"
GRPO_RECIPE = ROOT / "configs" / "grpo" / "tiny-copy.yaml"
BIN = Path(sys.executable).parent
PROBE_TASKS = 16  # validation tasks a checkpoint's greedy recall is read on
START_RECALL = 0.3  # the GRPO control starts from the first checkpoint at or above this
GREEDY_TASKS = 48  # held-out tasks the GRPO control's start and end models are run on greedily, real and swapped
# --check: a rerun on this machine kind repeats the figures exactly; on another, CPU float drift moves a trained
# model's greedy answers on a few tasks, so rates are compared within these absolute tolerances
TOLERANCE = {
    "sft_recall": 0.05,
    "swapped_recall": 0.05,
    "fact_token_acc_real": 0.05,
    "fact_token_acc_swapped": 0.05,
    "recall_before": 0.08,
    "recall_after": 0.08,
    "diff": 0.08,
    "shuffled_diff": 0.08,
}
TARGETS = {
    "sft_recall": (">=", 0.8),
    "swapped_recall": ("<=", 0.1),
}


def paired(before: dict[str, list[float]], after: dict[str, list[float]]) -> dict:
    """The mean of the per-task differences in mean recall (after - before) with its 95% t interval over tasks."""
    diffs = [statistics.fmean(after[t]) - statistics.fmean(before[t]) for t in sorted(before)]
    mean, half = mean_interval(diffs)
    return {"mean": round(mean, 4), "lo": round(mean - half, 4), "hi": round(mean + half, 4), "n": len(diffs)}


def pipeline(name: str, seed: int) -> Path:
    """The seed's tasks, expert episodes, tiny model and SFT in results/<name>/ (snakemake resumes what exists)."""
    run = ROOT / "results" / name
    command = [
        str(BIN / "snakemake"),
        f"results/{name}/models/sft-merged",
        "--workflow-profile",
        "workflow/profiles/local",
        "--configfile",
        str(CONFIG),
        "--config",
        f"seed={seed}",
        f"run={name}",
    ]
    env = os.environ | {"PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"}
    subprocess.run(command, cwd=ROOT, check=True, env=env)
    return run


def checkpoints(run: Path) -> list[Path]:
    found = [p for p in (run / "models" / "sft").glob("checkpoint-*") if (p / "config.json").is_file()]
    return sorted(found, key=lambda p: int(p.name.split("-")[1]))


def copy_control(run: Path, seed: int, sandbox, max_turns: int) -> dict:
    """L1 and L0 on the seed's SFT model."""
    from datasets import load_from_disk
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from terminus.determinism import deterministic_torch
    from terminus.tasks.record import load_tasks
    from terminus.train.evaluate import environment_check, held_out, swap_partners
    from terminus.train.probe import copy_diagnostic

    tasks_file, model, out = run / "tasks" / "valid.jsonl", run / "models" / "sft-merged", run / "control"
    common = {
        "sandbox": sandbox,
        "max_turns": max_turns,
        "concurrency": 2,
        "split": "test",
        "max_new_tokens": 256,
        "per_task": True,
        "name": "sft",
    }
    real = held_out(str(model), tasks_file, out / "held_out_sft.jsonl", **common)
    expert = read_jsonl(run / "tasks" / "valid.validation.trajectories.jsonl")
    swap = swap_partners([t for t in load_tasks(tasks_file) if t.split == "test"], expert)
    swapped = held_out(str(model), tasks_file, out / "held_out_sft_swapped.jsonl", swap=swap, **common)
    # the wiring's own control: the scripted expert copies what it reads, so through the same loop, sandbox, swap,
    # parser and fact checker it must recall every fact as they are and none swapped
    expert_common = common | {"policy": "scripted", "name": "expert"}
    expert_real = held_out("scripted", tasks_file, out / "held_out_expert.jsonl", **expert_common)
    expert_swapped = held_out(
        "scripted", tasks_file, out / "held_out_expert_swapped.jsonl", swap=swap, **expert_common
    )
    deterministic_torch(0)
    tokenizer = AutoTokenizer.from_pretrained(model)
    net = AutoModelForCausalLM.from_pretrained(model).eval()
    data = load_from_disk(str(run / "sft-data"))
    diagnostic = copy_diagnostic(net, tokenizer, list(data["validation"]), limit=80)
    curve = []  # the fact-token accuracy over SFT's checkpoints: is copying being learned, and how fast?
    for path in checkpoints(run):
        at = AutoModelForCausalLM.from_pretrained(path).eval()
        point = copy_diagnostic(at, tokenizer, list(data["validation"]), limit=40)
        curve.append([int(path.name.split("-")[1]), point["fact_token_acc_real"], point["fact_token_acc_swapped"]])
    return {
        "seed": seed,
        "sft_recall": rate(list(real["recall_per_task"].values())),
        "swapped_recall": rate(list(swapped["recall_per_task"].values())),
        "fact_token_acc_real": rate(diagnostic["per_conversation"]["real"]),
        "fact_token_acc_swapped": rate(diagnostic["per_conversation"]["swapped"]),
        "expert_recall": rate(list(expert_real["recall_per_task"].values())),
        "expert_swapped_recall": rate(list(expert_swapped["recall_per_task"].values())),
        "usable_answer_rate": real["usable_answer_rate"],
        "p_command": real["p_command"],
        "p_stated_given_printed": real["p_stated_given_printed"],
        "swapped_p_stated_given_printed": swapped["p_stated_given_printed"],
        "fact_tokens": diagnostic["fact_tokens"],
        "fact_token_curve": {"columns": ["step", "real", "swapped"], "rows": curve},
        # the wiring's other control: the held-out episodes ran in the environment the expert's training episodes
        # did (the same [toolchain: ...] lines), else what the model read differs from what it trained on
        "environment": environment_check(run / "collect" / "trajectories.jsonl", sorted(out.glob("*.jsonl"))),
    }


def starting_checkpoint(run: Path, sandbox, max_turns: int) -> dict:
    """The earliest checkpoint whose greedy recall on PROBE_TASKS validation tasks reaches START_RECALL (the last one
    when none does), with each probed checkpoint's recall."""
    from terminus.train.evaluate import held_out

    probed = {}
    found = checkpoints(run)
    if not found:
        raise SystemExit(f"{run}/models/sft has no checkpoint-* folders: configs/sft/tiny-copy.yaml keeps them")
    for path in found:
        result = held_out(
            str(path),
            run / "tasks" / "valid.jsonl",
            run / "control" / f"probe_{path.name}.jsonl",
            sandbox=sandbox,
            max_turns=max_turns,
            concurrency=2,
            split="val",
            limit=PROBE_TASKS,
            max_new_tokens=256,
            name=path.name,
        )
        probed[path.name] = result["fact_recall"]
        if result["fact_recall"] >= START_RECALL:
            break
    return {"checkpoint": str(path.relative_to(ROOT)), "probed_recall": probed}


def grpo(run: Path, seed: int, start: str, name: str, shuffle: bool) -> dict:
    """One GRPO run of the control from `start`; its before/after state (per-task recall lists)."""
    out = run / "control" / name
    command = [
        str(BIN / "terminus"),
        "grpo",
        "--recipe",
        str(GRPO_RECIPE),
        "--model-name-or-path",
        str(ROOT / start),
        "--tasks-file",
        str(run / "tasks" / "valid.jsonl"),
        "--experiment-config",
        str(run / "config.yaml"),
        "--output-dir",
        str(out),
        "--seed",
        str(seed),
    ] + (["--shuffle-rewards", "true"] if shuffle else [])
    state = out / "before_after.json"
    if (out / "final" / "config.json").is_file() and state.is_file() and "report" in json.loads(state.read_text()):
        return json.loads(state.read_text())  # done: a rerun of the benchmark resumes after it
    log = run / "logs" / f"control_{name}.log"
    with log.open("w") as handle:
        done = subprocess.run(command, cwd=ROOT, stdout=handle, stderr=subprocess.STDOUT)
    if done.returncode:
        raise SystemExit(f"GRPO ({name}) failed: see {log}")
    return json.loads((out / "before_after.json").read_text())


def greedy_pair(run: Path, model: Path, name: str, sandbox, max_turns: int, tasks: int = GREEDY_TASKS) -> dict:
    """A model's greedy recall on the first `tasks` held-out tasks, as they are and with swapped tool output."""
    from terminus.tasks.record import load_tasks
    from terminus.train.evaluate import held_out, swap_partners

    tasks_file = run / "tasks" / "valid.jsonl"
    test = [t for t in load_tasks(tasks_file) if t.split == "test"]
    swap = swap_partners(test, read_jsonl(run / "tasks" / "valid.validation.trajectories.jsonl"))
    chosen = set(sorted(swap)[:tasks])
    common = {"sandbox": sandbox, "max_turns": max_turns, "concurrency": 2, "split": "test", "max_new_tokens": 256,
              "per_task": True, "task_ids": chosen, "name": name}  # fmt: skip
    out = run / "control"
    real = held_out(str(model), tasks_file, out / f"greedy_{name}.jsonl", **common)
    swapped = held_out(str(model), tasks_file, out / f"greedy_{name}_swapped.jsonl",
                       swap={t: swap[t] for t in chosen}, **common)  # fmt: skip
    return {"recall": rate(list(real["recall_per_task"].values())),
            "swapped_recall": rate(list(swapped["recall_per_task"].values()))}  # fmt: skip


def grpo_control(run: Path, seed: int, sandbox, max_turns: int) -> dict:
    start = starting_checkpoint(run, sandbox, max_turns)
    real = grpo(run, seed, start["checkpoint"], "grpo", shuffle=False)
    # the shuffled run starts where the real one did and would sample the same before-figures (same model, tasks
    # and seed): they are handed over rather than sampled again (`Measure` reuses a state of the same inputs)
    shuffled_dir = run / "control" / "grpo-shuffled"
    shuffled_dir.mkdir(parents=True, exist_ok=True)
    handed = shuffled_dir / "before_after.json"
    if not (shuffled_dir / "final" / "config.json").is_file() or "report" not in (
        json.loads(handed.read_text()) if handed.is_file() else {}
    ):  # a finished shuffled run is kept (a rerun of the benchmark resumes after it, as for the real one)
        write_json_atomic(handed, {k: real[k] for k in ("inputs", "before_ids", "before")})
    shuffled = grpo(run, seed, start["checkpoint"], "grpo-shuffled", shuffle=True)
    before, after = real["before"]["recall"], real["after"]["recall"]
    # does GRPO's rise come from copying? Greedy on held-out tasks as they are and swapped, before and after: a rise
    # in copying shows as real recall up with swapped recall flat; better guessing lifts both
    greedy = {
        name: greedy_pair(run, ROOT / model, name, sandbox, max_turns)
        for name, model in (("start", start["checkpoint"]), ("grpo", run / "control" / "grpo" / "final"))
    }
    return {
        "seed": seed,
        "start": start,
        "recall_before": rate([statistics.fmean(v) for _, v in sorted(before.items())]),
        "recall_after": rate([statistics.fmean(v) for _, v in sorted(after.items())]),
        "diff": paired(before, after),
        "shuffled_recall_after": rate([statistics.fmean(v) for _, v in sorted(shuffled["after"]["recall"].items())]),
        "shuffled_diff": paired(shuffled["before"]["recall"], shuffled["after"]["recall"]),
        # what the reward itself did, drift apart: the real run's recall after minus the shuffled run's, paired over
        # the same tasks (both start from the same model and the same before-samples)
        "real_minus_shuffled": paired(shuffled["after"]["recall"], after),
        "greedy": greedy,
        "samples_per_task": real["report"]["samples_per_task"],
        "reward_diff": {"mean": real["report"]["diff"], "ci95": real["report"]["ci95"]},
    }


def one_seed(seed: int, prefix: str) -> dict:
    from terminus.runspec import load_run

    started = time.monotonic()
    fresh = not (ROOT / "results" / f"{prefix}-{seed}").exists()
    run = pipeline(f"{prefix}-{seed}", seed)
    spec = load_run(run / "config.yaml")
    max_turns = spec.cfg.collect.max_turns
    made = time.monotonic()
    copy = copy_control(run, seed, spec.sandbox, max_turns)
    copied = time.monotonic()
    grpo = grpo_control(run, seed, spec.sandbox, max_turns)
    # wall clock of each part on this machine, from a run that started from nothing; a resumed one keeps what its
    # first complete run measured (or none: a resumed run's time is not a seed's cost)
    wall = {"pipeline": round(made - started), "l1": round(copied - made), "l2": round(time.monotonic() - copied)}
    earlier = run / "control" / "summary.json"
    copy["wall_s"] = (
        wall if fresh else (json.loads(earlier.read_text())["copy"].get("wall_s") if earlier.is_file() else None)
    )
    summary = {"copy": copy, "grpo": grpo}
    write_json_atomic(run / "control" / "summary.json", summary | {"stamp": result_stamp(spec.config["_hash"])})
    return summary


def targets(copy: list[dict], grpo: list[dict]) -> dict:
    out = {
        "copy_recall_every_seed": {"value": [r["sft_recall"]["mean"] for r in copy], "target": ">= 0.8"},
        "copy_swapped_recall_every_seed": {"value": [r["swapped_recall"]["mean"] for r in copy], "target": "<= 0.1"},
        "grpo_diff_above_zero": {
            "value": [[r["diff"]["lo"], r["diff"]["hi"]] for r in grpo],
            "target": "interval above 0 on >= 2 of 3 seeds",
        },
        "grpo_shuffled_contains_zero": {
            "value": [[r["shuffled_diff"]["lo"], r["shuffled_diff"]["hi"]] for r in grpo],
            "target": "interval contains 0 on every seed",
        },
    }
    out["environment_as_trained_every_seed"] = {
        "value": [r.get("environment", {}).get("unseen") for r in copy],
        "target": "no held-out [toolchain: ...] line that training lacked",
        "met": all(r.get("environment", {}).get("same") for r in copy),
    }
    out["copy_recall_every_seed"]["met"] = all(v >= 0.8 for v in out["copy_recall_every_seed"]["value"])
    out["copy_swapped_recall_every_seed"]["met"] = all(
        v <= 0.1 for v in out["copy_swapped_recall_every_seed"]["value"]
    )
    out["grpo_diff_above_zero"]["met"] = sum(lo > 0 for lo, _ in out["grpo_diff_above_zero"]["value"]) >= min(
        2, len(grpo)
    )
    out["grpo_shuffled_contains_zero"]["met"] = all(
        lo <= 0 <= hi for lo, hi in out["grpo_shuffled_contains_zero"]["value"]
    )
    return out


def compare(fresh: dict, committed: dict) -> list[str]:
    """The figures of the rerun seeds that differ from the committed ones by more than TOLERANCE."""
    problems = []
    for section, keys in (
        ("copy_control", ("sft_recall", "swapped_recall", "fact_token_acc_real", "fact_token_acc_swapped")),
        ("grpo_control", ("recall_before", "recall_after", "diff", "shuffled_diff")),
    ):
        old = {r["seed"]: r for r in committed.get(section, {}).get("per_seed", [])}
        for row in fresh[section]["per_seed"]:
            if row["seed"] not in old:
                problems.append(f"{section}: seed {row['seed']} has no committed figures")
                continue
            for key in keys:
                a, b = row[key]["mean"], old[row["seed"]][key]["mean"]
                if a is None or b is None or abs(a - b) > TOLERANCE[key]:
                    problems.append(
                        f"{section} seed {row['seed']} {key}: {a} now, {b} committed (tolerance {TOLERANCE[key]})"
                    )
                else:
                    print(f"{section} seed {row['seed']} {key}: {a} now, {b} committed: within {TOLERANCE[key]}")
    return problems


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    ap.add_argument("--check", action="store_true", help="Rerun and compare with the committed learning.json.")
    ap.add_argument("--out", type=Path, default=RESULTS / "learning.json")
    args = ap.parse_args()
    prefix = "copy-check" if args.check else "copy"
    for seed in args.seeds if args.check else []:  # a check reruns everything: nothing of an earlier run is reused
        shutil.rmtree(ROOT / "results" / f"{prefix}-{seed}", ignore_errors=True)
    rows = [one_seed(seed, prefix) for seed in args.seeds]
    fresh = {
        "copy_control": {"per_seed": [r["copy"] for r in rows]},
        "grpo_control": {"per_seed": [r["grpo"] for r in rows]},
    }
    if args.check:
        committed = json.loads(args.out.read_text()) if args.out.is_file() else {}
        problems = compare(fresh, committed)
        for problem in problems:
            print("DIFFERS:", problem)
        print("learning-check:", "figures differ" if problems else "the rerun seeds match the committed figures")
        # its verdict and what a seed costs from nothing, for the README (learning.json itself is left as it is)
        walls = {str(r["copy"]["seed"]): r["copy"]["wall_s"] for r in rows}
        write_result("learning_check", {"seeds": args.seeds, "passed": not problems, "problems": problems,
                                        "wall_s": walls, "tolerance": TOLERANCE})  # fmt: skip
        return 1 if problems else 0
    data = json.loads(args.out.read_text()) if args.out.is_file() else {}
    # the controls' sections carry their own stamp: the file's top-level one is the learning runs' (learning.py),
    # which may be older, and is not claimed for them
    # named by their hashes: the control's config and both recipes (each seed's summary in results/copy-<seed>/control
    # carries its run's filled-config hash)
    recipes = (CONFIG, ROOT / "configs" / "sft" / "tiny-copy.yaml", GRPO_RECIPE)
    stamp = result_stamp(file_sha256(CONFIG)[:12], {str(p.relative_to(ROOT)): file_sha256(p) for p in recipes})
    for section in fresh.values():
        section["stamp"] = stamp
    data |= fresh
    data["control_targets"] = targets(fresh["copy_control"]["per_seed"], fresh["grpo_control"]["per_seed"])
    data["control_seeds"] = args.seeds
    write_text_atomic(args.out, json.dumps(data, indent=1) + "\n")
    print(json.dumps({k: data[k] for k in ("copy_control", "grpo_control", "control_targets")}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
