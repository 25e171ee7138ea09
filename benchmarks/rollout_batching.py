"""One GRPO rollout phase of 16 episodes, sequential (one episode and one sequence at a time, as `make_rollout` did)
against batched (the episodes in lockstep, one left-padded `generate` per turn for all live episodes), with the
smoke scale's tiny model on this CPU. Same tasks, same greedy decoding, so both do the same work token for token
(tests/collect/test_lockstep.py checks that). Writes results/benchmarks/rollout_batching.json:
{"episodes": 16, "sequential_s", "batched_s", "speedup", "generation_speedup", ...}.

    python benchmarks/rollout_batching.py [--episodes 16] [--max-new-tokens 160] [--max-turns 4]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from functools import partial
from pathlib import Path

from benchmark_result import tiny_model_setup, write_result
from terminus.collect.lockstep import run_lockstep
from terminus.collect.runner import run_episode
from terminus.models.generate import TransformersGenerator
from terminus.models.local import load_transformers
from terminus.sandbox import SandboxSpec, default_backend
from terminus.tasks.build import small_corpus
from terminus.tasks.record import load_tasks
from terminus.train.tiny import build_tiny_model


class TimedPolicy:
    """Batch-1 generation through the same generator class, timed: the sequential path's generation share."""

    def __init__(self, generator: TransformersGenerator) -> None:
        self.generator, self.name, self.generation_s = generator, "sequential", 0.0

    def respond(self, messages: list[dict], tools: list[dict], tool_choice: str | None = None) -> dict:
        start = time.perf_counter()
        reply = self.generator.generate([messages], [tools])[0]
        self.generation_s += time.perf_counter() - start
        return reply


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=16)
    parser.add_argument("--max-new-tokens", type=int, default=160)
    parser.add_argument("--max-turns", type=int, default=4)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="rollout-batching-") as tmp:
        root = Path(tmp)
        tasks_file = small_corpus(root, ["python", "node"], 2, ["fail", "pass"])
        tasks = load_tasks(tasks_file)
        # GRPO's shape: a few tasks, each rolled out several times (num_generations)
        batch = [tasks[i % min(4, len(tasks))] for i in range(args.episodes)]
        model, tokenizer = load_transformers(str(build_tiny_model(root / "model")))
        generator = TransformersGenerator(model, tokenizer, args.max_new_tokens)
        backend = default_backend()

        def episode(task, policy):
            return run_episode(task, tasks_file, policy, sandbox=SandboxSpec(backend), max_turns=args.max_turns)

        sequential = TimedPolicy(generator)
        start = time.perf_counter()
        seq_trajs = [episode(task, policy=sequential) for task in batch]
        sequential_s = time.perf_counter() - start

        run = run_lockstep([partial(episode, task) for task in batch], generator)
        same = [t.messages for t in run.trajectories] == [t.messages for t in seq_trajs]
    tokens = sum(t.completion_tokens for t in seq_trajs)
    result = {
        "episodes": args.episodes,
        "sequential_s": round(sequential_s, 2),
        "batched_s": round(run.wall_s, 2),
        "speedup": round(sequential_s / run.wall_s, 2),
        "generation_sequential_s": round(sequential.generation_s, 2),
        "generation_batched_s": round(run.generation_s, 2),
        "generation_speedup": round(sequential.generation_s / run.generation_s, 2),
        "generated_tokens": tokens,
        "model_turns": sum(1 for t in seq_trajs for m in t.messages if m["role"] == "assistant"),
        "batch_sizes": run.batch_sizes,
        "same_episodes": same,
        "setup": tiny_model_setup(args.max_new_tokens, args.max_turns, backend, "cpu (2 cores)"),
    }
    write_result("rollout_batching", result)


if __name__ == "__main__":
    main()
