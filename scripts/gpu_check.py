"""The paper scale's GPU check, for when a GPU is lent: Qwen3-4B's exact architecture with random weights
(configs/models/qwen3-4b.yaml; nothing is downloaded), then

1. two GRPO steps with the paper recipe (configs/grpo/qwen3-4b.yaml: LoRA, bf16, vLLM colocated, 8 generations,
   1,024 tokens a turn), rollouts batched through TRL's vLLM engine: step time, rollout tokens/s, peak memory;
2. the same rollouts' generation one sequence at a time with transformers on the same GPU (`vllm_vs_sequential`);
3. one short eval cell (execution benchmark) with the model served by vLLM's OpenAI server at concurrency 16.

Writes results/benchmarks/gpu_check.json. `--dry-run` checks everything that needs no GPU (the architecture's
parameter count, the tokenizer's ids and chat template, the recipe and its overrides, the corpus, the eval cell's
config) and writes nothing; the tests run it.

    python scripts/gpu_check.py --dry-run
    python scripts/gpu_check.py                  # on a GPU machine: about 10 minutes on one H200
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

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


def eval_config(model: str, episodes: int) -> dict:
    from terminus.config import load_config

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
        ],
    }
    return config


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
    from terminus.tasks.record import load_tasks

    policy = TransformersPolicy(model_dir, max_new_tokens=max_new_tokens, temperature=1.0)
    start, tokens = time.perf_counter(), 0
    for task in load_tasks(tasks)[:episodes]:
        traj = run_episode(task, tasks, policy, backend=sandbox, max_turns=3)
        tokens += traj.completion_tokens
    seconds = time.perf_counter() - start
    return {
        "episodes": episodes,
        "tokens": tokens,
        "seconds": round(seconds, 1),
        "tokens_per_s": round(tokens / seconds, 1),
    }


def real_run(args) -> dict:
    import torch

    from terminus.eval.cells import cell_names
    from terminus.eval.grid import run_cell
    from terminus.io import read_jsonl
    from terminus.judge.scorer import Scorer
    from terminus.tasks.record import load_tasks
    from terminus.train import grpo
    from terminus.train.arch import build_reference_model

    if not torch.cuda.is_available():
        raise SystemExit("no GPU: run with --dry-run, or on a machine with one")
    root = Path(tempfile.mkdtemp(prefix="gpu-check-"))
    result: dict = {"gpu": torch.cuda.get_device_name(0), "torch": torch.__version__}
    start = time.perf_counter()
    result["architecture"] = build_reference_model(root / "model", device="cuda")
    torch.cuda.empty_cache()
    result["build_s"] = round(time.perf_counter() - start, 1)
    tasks = corpus(root, args.repos)

    torch.cuda.reset_peak_memory_stats()
    start = time.perf_counter()
    trained = grpo.main(*grpo.parse(grpo_argv(str(root / "model"), tasks, root / "grpo", args.steps, args.sandbox)))
    grpo_s = time.perf_counter() - start
    rows = [r for r in read_jsonl(root / "grpo" / "metrics.jsonl") if "episode/generated_tokens_per_s" in r]
    result["grpo"] = {
        "steps": args.steps,
        "wall_s": round(grpo_s, 1),
        "step_time_s": [r.get("step_time") for r in rows],
        "rollout_tokens_per_s": round(statistics.fmean(r["episode/generated_tokens_per_s"] for r in rows), 1),
        "generation_s_per_step": round(statistics.fmean(r["episode/generation_s"] for r in rows), 1),
        "turns_per_episode": round(statistics.fmean(r["episode/turns"] for r in rows), 2),
        "peak_torch_memory_gib": round(torch.cuda.max_memory_allocated() / 2**30, 1),
        "model": trained.get("model"),
    }
    free, total = torch.cuda.mem_get_info()
    result["grpo"]["device_memory_used_gib_after"] = round((total - free) / 2**30, 1)

    sequential = sequential_tokens_per_s(str(root / "model"), tasks, 2, 256, args.sandbox)
    result["sequential_transformers"] = sequential
    result["vllm_vs_sequential"] = round(result["grpo"]["rollout_tokens_per_s"] / sequential["tokens_per_s"], 1)

    config = eval_config(str(root / "model"), 16)
    task_map = {t.id: t for t in load_tasks(tasks)}
    start = time.perf_counter()
    (cell,) = cell_names(config["eval"])
    records = run_cell(
        config,
        tasks,
        root / "eval",
        Scorer(tasks=task_map),
        cell,
        show_progress=False,
    )
    seconds = time.perf_counter() - start
    result["served_eval_cell"] = {
        "episodes": len(records),
        "wall_s_with_server_start": round(seconds, 1),
        "episodes_per_min": round(60 * len(records) / seconds, 1),
        "concurrency": 16,
    }
    return result


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
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    sys.exit(main())
