"""`terminus collect`: a teacher (scripted expert, any OpenAI-compatible model, vLLM, transformers) runs the
tasks of the chosen splits; trajectories land in a JSON-lines file that resumes after an interruption."""

from __future__ import annotations

from functools import partial
from pathlib import Path

from terminus.collect.runner import run_episode, run_jobs
from terminus.tasks.record import Task, load_tasks


def _episode(task: Task, tasks_file: Path, policy, backend: str | None, max_turns: int, key: str) -> dict:
    return run_episode(task, tasks_file, policy, backend=backend, max_turns=max_turns, trajectory_id=key).to_dict()


def collect(
    tasks_file: Path,
    policy,
    out: Path,
    *,
    splits: tuple[str, ...] = ("train", "val"),
    samples: int = 1,
    backend: str | None = None,
    max_turns: int = 10,
    concurrency: int = 4,
    show_progress: bool = True,
) -> list[dict]:
    tasks = [t for t in load_tasks(tasks_file) if t.split in splits]
    if not tasks:
        raise ValueError(f"{tasks_file} has no tasks in the splits {', '.join(splits)}")
    jobs = []
    for task in tasks:
        for k in range(samples):
            key = task.id if samples == 1 else f"{task.id}#{k}"
            jobs.append((key, partial(_episode, task, Path(tasks_file), policy, backend, max_turns, key)))
    return run_jobs(jobs, Path(out), concurrency, show_progress, f"collect ({policy.name})")
