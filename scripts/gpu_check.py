"""The paper scale's GPU check, for when a GPU is lent: Qwen3-4B's exact architecture with random weights
(configs/models/qwen3-4b.yaml; nothing is downloaded), then

1. two GRPO steps with the paper recipe (configs/grpo/qwen3-4b.yaml: LoRA, bf16, vLLM colocated, 8 generations,
   1,024 tokens a turn), rollouts batched through TRL's vLLM engine: step time, rollout tokens/s, peak memory;
2. the same rollouts' generation one sequence at a time with transformers on the same GPU (`vllm_vs_sequential`);
3. one short eval cell (execution benchmark) with the model served by vLLM's OpenAI server at concurrency 16, at a
   `gpu_memory_utilization` computed from what is free once the earlier steps' memory is given back.

Writes results/benchmarks/gpu_check.json after every step (atomically), so a step that fails or a job cut off
keeps the steps before it; a failed step is recorded as its error and the next one runs. Between steps the models
are dropped and the CUDA cache emptied, and the memory still in use is recorded.

What the figures are, and are not: random weights never call the tool or answer, and rarely sample an end of turn,
so every turn runs to its 1,024-token limit and an episode ends after a turn or two on a format error. The figures
measure the machinery at that shape: vLLM's generation throughput for 32 sequences in lockstep, one update on
episodes of ~1-3k tokens, the weight sync, peak memory at those lengths, the served cell's start-up and throughput.
They are not a trained model's episodes (6-40k tokens over 8-10 turns, so peak memory of a real micro-batch is
higher), and they hold no sandbox command time (no command runs), no judge time (`--use_llm_judge false`) and
nothing about learning. docs/reproduce.md's estimate scales them to real episodes.

`--dry-run` checks everything that needs no GPU (the architecture's parameter count, the tokenizer's ids and chat
template, the recipe and its overrides, the corpus, the eval cell's config) and writes nothing; the tests run it.

    python scripts/gpu_check.py --dry-run
    python scripts/gpu_check.py                  # on a GPU machine: about 10 minutes on one H200
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from terminus.io import write_json_atomic

log = logging.getLogger("gpu_check")
ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "results" / "benchmarks" / "gpu_check.json"
RECIPE = ROOT / "configs" / "grpo" / "qwen3-4b.yaml"


def corpus(root: Path, repos: int) -> Path:
    from terminus.tasks.build import small_corpus

    return small_corpus(root, ["python", "node"], repos, ["fail", "pass", "broken"])


def grpo_argv(model: str, tasks: Path, out: Path, steps: int, sandbox: str) -> list[str]:
    """The paper recipe as is, but for the model, the tasks, the step count and what needs an endpoint."""
    return [
        "--config",
        str(RECIPE),
        "--model_name_or_path",
        model,
        "--tasks_file",
        str(tasks),
        "--output_dir",
        str(out),
        "--max_steps",
        str(steps),
        "--use_llm_judge",
        "false",
        "--experiment_config",
        "configs/config.yaml",
        "--report_to",
        "none",
        "--save_strategy",
        "no",
        "--sandbox",
        sandbox,
    ]


def eval_config(model: str, episodes: int, gpu_memory_utilization: float | None = None) -> dict:
    from terminus.config import load_config, refill

    config = load_config(ROOT / "configs" / "config.yaml")
    config["eval"] |= {
        "benchmarks": ["execution"],
        "split": "train",
        "max_tasks": episodes,
        "concurrency": 16,
        "subagents": [
            {
                "name": "qwen3-4b-random",
                "policy": "vllm",
                "model": model,
                "max_new_tokens": 1024,
                "max_model_len": 32768,
            }
            | ({"gpu_memory_utilization": gpu_memory_utilization} if gpu_memory_utilization else {})
        ],
    }
    return refill(config)  # the subagent's defaults (its tool_call_limit)


def dry_run(args) -> dict:
    from terminus.eval.cells import cell_names
    from terminus.train import grpo
    from terminus.train.arch import build_reference_model

    built = build_reference_model(None, device="meta")
    with tempfile.TemporaryDirectory(prefix="gpu-check-") as tmp:
        tasks = corpus(Path(tmp), 1)
        argv = [*grpo_argv("Qwen/Qwen3-4B", tasks, Path(tmp) / "grpo", 2, args.sandbox), "--dry_run", "true"]
        script, training, model = grpo.parse(argv)  # --dry_run: TrainingArguments accepts bf16 without a GPU
    if not (training.use_vllm and training.vllm_mode == "colocate" and model.use_peft and training.bf16):
        raise SystemExit(f"{RECIPE} is not the paper's setting (vLLM colocated, LoRA, bf16)")
    cells = cell_names(eval_config("MODEL", 16)["eval"])
    try:
        import vllm  # noqa: F401  (the engine TRL and the eval cell start)
    except ImportError as err:
        raise SystemExit(f"vllm does not import: {err}") from None
    return {
        "dry_run": True,
        "architecture": built,
        "recipe": str(RECIPE.relative_to(ROOT)),
        "num_generations": training.num_generations,
        "max_new_tokens": script.max_new_tokens,
        "max_turns": script.max_turns,
        "vllm_mode": training.vllm_mode,
        "vllm_gpu_memory_utilization": training.vllm_gpu_memory_utilization,
        "eval_cells": cells,
    }


def sequential_tokens_per_s(model_dir: str, tasks: Path, episodes: int, max_new_tokens: int, sandbox: str) -> dict:
    """The same kind of rollouts, one episode and one sequence at a time, with transformers on this GPU."""
    from terminus.collect.runner import run_episode
    from terminus.models.local import TransformersPolicy
    from terminus.sandbox.spec import SandboxSpec
    from terminus.tasks.record import load_tasks

    policy = TransformersPolicy(model_dir, max_new_tokens=max_new_tokens, temperature=1.0)
    start, tokens = time.perf_counter(), 0
    for task in load_tasks(tasks)[:episodes]:
        traj = run_episode(task, tasks, policy, sandbox=SandboxSpec(sandbox), max_turns=3)
        tokens += traj.completion_tokens
    seconds = time.perf_counter() - start
    return {
        "episodes": episodes,
        "tokens": tokens,
        "seconds": round(seconds, 1),
        "tokens_per_s": round(tokens / seconds, 1),
    }


def run_steps(
    steps: list[tuple[str, Callable[[dict], dict]]],
    result: dict,
    out: Path,
    deadline: float | None = None,
    estimates: dict[str, float] | None = None,
) -> dict:
    """Each step's figures under its name, the whole written to `out` (atomically) after every step; a step that
    raises is recorded as its error, and the next one runs. With a `deadline` (a `time.perf_counter()` value), a
    step whose estimated seconds exceed what is left is recorded as skipped, with the reason, and not started: a
    lent machine's time is fixed, and a step cut off midway would leave nothing."""
    write_json_atomic(out, result)
    for name, step in steps:
        start = time.perf_counter()
        needs = (estimates or {}).get(name, 0.0)
        if deadline is not None and deadline - start < needs:
            left = max(0.0, deadline - start)
            result[name] = {"skipped": f"needs ~{needs:.0f} s, {left:.0f} s of the budget left", "estimate_s": needs}
            write_json_atomic(out, result)
            continue
        try:
            result[name] = step(result)
        except Exception as err:  # any failure of a step is a finding to record, and the next step may still run
            log.exception("step %s failed", name)
            result[name] = {"error": f"{type(err).__name__}: {err}"[:2000]}
        result[name]["step_wall_s"] = round(time.perf_counter() - start, 1)
        write_json_atomic(out, result)
    return result


def free_gpu() -> dict:
    """Give back what the previous step held: the models the process keeps, then the allocator's cache."""
    import gc

    import torch

    from terminus.models.local import unload_transformers

    unload_transformers()
    gc.collect()
    torch.cuda.empty_cache()
    free, total = torch.cuda.mem_get_info()
    return {"free_gib": round(free / 2**30, 1), "total_gib": round(total / 2**30, 1)}


def real_run(args) -> dict:
    import torch

    from terminus.eval.cells import cell_names
    from terminus.eval.grid import run_cell
    from terminus.io import read_jsonl
    from terminus.judge.scorer import Scorer
    from terminus.models.serve import fitting_memory_fraction
    from terminus.runspec import RunSpec
    from terminus.sandbox.spec import SandboxSpec
    from terminus.tasks.record import load_tasks
    from terminus.train import grpo
    from terminus.train.arch import build_reference_model

    if not torch.cuda.is_available():
        raise SystemExit("no GPU: run with --dry-run, or on a machine with one")
    root = Path(tempfile.mkdtemp(prefix="gpu-check-"))
    model = str(root / "model")
    state: dict = {}

    def build(result: dict) -> dict:
        start = time.perf_counter()
        built = {"architecture": build_reference_model(root / "model", device="cuda")}
        state["tasks"] = corpus(root, args.repos)
        return built | {"build_s": round(time.perf_counter() - start, 1), "memory_after_free": free_gpu()}

    def grpo_steps(result: dict) -> dict:
        torch.cuda.reset_peak_memory_stats()
        start = time.perf_counter()
        trained = grpo.main(*grpo.parse(grpo_argv(model, state["tasks"], root / "grpo", args.steps, args.sandbox)))
        grpo_s = time.perf_counter() - start
        rows = [r for r in read_jsonl(root / "grpo" / "metrics.jsonl") if "episode/generated_tokens_per_s" in r]
        figures = {
            "steps": args.steps,
            "wall_s": round(grpo_s, 1),
            "step_time_s": [r.get("step_time") for r in rows],
            "rollout_tokens_per_s": round(statistics.fmean(r["episode/generated_tokens_per_s"] for r in rows), 1),
            "generation_s_per_step": round(statistics.fmean(r["episode/generation_s"] for r in rows), 1),
            "turns_per_episode": round(statistics.fmean(r["episode/turns"] for r in rows), 2),
            "peak_torch_memory_gib": round(torch.cuda.max_memory_allocated() / 2**30, 1),
            "model": trained.get("model"),
        }
        del trained
        # TRL's colocated engine is vLLM in this process: its model-parallel groups keep their buffers alive
        with contextlib.suppress(ImportError):
            from vllm.distributed.parallel_state import destroy_distributed_environment, destroy_model_parallel

            destroy_model_parallel()
            destroy_distributed_environment()
        return figures | {"memory_after_free": free_gpu()}

    def sequential(result: dict) -> dict:
        figures = sequential_tokens_per_s(model, state["tasks"], 2, 256, args.sandbox)
        rollout = (result.get("grpo") or {}).get("rollout_tokens_per_s")
        if rollout:
            figures["vllm_vs_sequential"] = round(rollout / figures["tokens_per_s"], 1)
        return figures | {"memory_after_free": free_gpu()}

    def served_cell(result: dict) -> dict:
        fraction = fitting_memory_fraction()  # beside what this process still holds, not vLLM's default 0.9
        config = eval_config(model, 16, fraction)
        task_map = {t.id: t for t in load_tasks(state["tasks"])}
        start = time.perf_counter()
        (cell,) = cell_names(config["eval"])
        run = RunSpec(config, SandboxSpec(config.get("sandbox"), config.get("sandbox_image")))
        records = run_cell(run, state["tasks"], root / "eval", Scorer(tasks=task_map), cell, show_progress=False)
        seconds = time.perf_counter() - start
        return {
            "episodes": len(records),
            "wall_s_with_server_start": round(seconds, 1),
            "episodes_per_min": round(60 * len(records) / seconds, 1),
            "concurrency": 16,
            "gpu_memory_utilization": fraction,
        }

    result: dict = {"gpu": torch.cuda.get_device_name(0), "torch": torch.__version__, "random_weights": True}
    steps = [("build", build), ("grpo", grpo_steps), ("sequential_transformers", sequential)]
    steps.append(("served_eval_cell", served_cell))
    return run_steps(steps, result, args.out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dry-run", action="store_true", help="Check without a GPU; write nothing.")
    parser.add_argument("--steps", type=int, default=2)
    parser.add_argument("--repos", type=int, default=3, help="Synthetic repositories per language.")
    parser.add_argument("--sandbox", default="local", help="A fresh GPU machine has no bubblewrap: local.")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    os.chdir(ROOT)  # the recipe's and config's relative paths
    if args.dry_run:
        print(json.dumps(dry_run(args), indent=1))
        return
    result = real_run(args)
    print(json.dumps(result, indent=1))
    failed = [name for name, figures in result.items() if isinstance(figures, dict) and "error" in figures]
    if failed:
        raise SystemExit(f"steps failed: {', '.join(failed)} (their errors are in {args.out})")


if __name__ == "__main__":
    sys.exit(main())
