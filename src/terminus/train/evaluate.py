"""Held-out evidence that training works: base, SFT and GRPO models run the test split's tasks through the real
loop and sandbox (greedy), scored by the fact checker; GRPO's reward over its steps from its metrics log.
Writes results/<run>/training/summary.json.

Each model is made once through `models.shared_policy`, as an eval cell makes its subagent: `transformers` loads it
in this process (smoke scale), `vllm` serves it with vLLM's OpenAI-compatible server for the model's episodes,
which call it concurrently so that vLLM batches them (paper scale: `model.summary_policy`)."""

from __future__ import annotations

import json
import statistics
from functools import partial
from pathlib import Path

from terminus.collect.runner import run_episode, run_jobs
from terminus.io import write_json_atomic
from terminus.judge.facts import check, observations_of
from terminus.tasks.record import Task, load_tasks


def _episode(task: Task, tasks_file: Path, policy, max_turns: int, backend) -> dict:
    return run_episode(task, tasks_file, policy, backend=backend, max_turns=max_turns).to_dict()


def held_out(
    model: str,
    tasks_file: Path,
    out: Path,
    *,
    split: str = "test",
    max_turns: int = 10,
    max_new_tokens: int = 256,
    concurrency: int = 2,
    backend: str | None = None,
    policy: str = "transformers",
    name: str | None = None,
) -> dict:
    tasks = {t.id: t for t in load_tasks(tasks_file) if t.split == split}
    if not tasks:
        raise ValueError(f"{tasks_file} has no {split} tasks")
    from terminus.models import shared_policy
    from terminus.models.local import warm_imports

    warm_imports()
    name = name or Path(model).name
    # made once, shared by the episodes (a served model only while its own episodes run)
    logs = out.parent / "logs"
    with shared_policy(policy, model, served_name=name, log_dir=logs, max_new_tokens=max_new_tokens) as shared:
        jobs = [(i, partial(_episode, t, tasks_file, shared, max_turns, backend)) for i, t in sorted(tasks.items())]
        records = run_jobs(jobs, out, concurrency, show_progress=True, label=f"held-out ({name})")
    answered, recalls = [], []
    for r in records:
        task = tasks[r["task_id"]]
        answered.append(float(r["termination"] == "final_answer"))
        recalls.append(check(r["final_answer"], task.facts, task.task_type, observations_of(r["messages"])).recall)
    return {
        "final_answer_rate": round(statistics.fmean(answered), 4),
        "fact_recall": round(statistics.fmean(recalls), 4),
        "n": len(records),
    }


def reward_curve(metrics: Path) -> list[tuple[int, float]]:
    rows = [json.loads(line) for line in Path(metrics).read_text().splitlines() if line.strip()]
    return [(r["step"], float(r["reward"])) for r in rows if "reward" in r]


def training_summary(
    tasks_file: Path,
    models: dict[str, str],
    grpo_metrics: Path,
    out: Path,
    *,
    stamp: dict,
    max_turns: int = 10,
    max_new_tokens: int = 256,
    concurrency: int = 2,
    backend: str | None = None,
    policy: str = "transformers",
) -> dict:
    summary: dict = {}
    for name, model in models.items():
        summary[name] = held_out(
            model,
            tasks_file,
            out.parent / f"held_out_{name}.jsonl",
            max_turns=max_turns,
            max_new_tokens=max_new_tokens,
            concurrency=concurrency,
            backend=backend,
            policy=policy,
            name=name,
        )
    curve = reward_curve(grpo_metrics)
    if not curve:
        raise ValueError(f"{grpo_metrics} holds no reward: did GRPO log any step?")
    k = max(1, len(curve) // 4)  # first and last quarter, so that one noisy step does not decide
    summary.setdefault("grpo", {}).update(
        reward_first=round(statistics.fmean(r for _, r in curve[:k]), 4),
        reward_last=round(statistics.fmean(r for _, r in curve[-k:]), 4),
        steps=curve[-1][0],
        reward_curve=[[s, round(r, 4)] for s, r in curve],
    )
    summary.update(stamp)
    write_json_atomic(out, summary)
    return summary
