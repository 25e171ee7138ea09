"""`terminus collect`: a teacher (scripted expert, any OpenAI-compatible model, vLLM, transformers) runs the
tasks of the chosen splits; trajectories land in a JSON-lines file that resumes after an interruption."""

from __future__ import annotations

from functools import partial
from pathlib import Path

from terminus.collect.provenance import file_sha256
from terminus.collect.runner import check_workspaces, run_episode, run_jobs
from terminus.sandbox.spec import SandboxSpec
from terminus.tasks.record import Task, TaskFileError, load_tasks


def _episode(task: Task, tasks_file: Path, policy, sandbox: SandboxSpec, max_turns: int, key: str) -> dict:
    # fail_alone: a task whose sandbox or setup fails ends its own episode (a `start_failed` record), not the stage
    episode = run_episode(
        task, tasks_file, policy, sandbox=sandbox, max_turns=max_turns, trajectory_id=key, fail_alone=True
    )
    return episode.to_dict()


def collect(
    tasks_file: Path,
    policy,
    out: Path,
    *,
    sandbox: SandboxSpec,
    max_turns: int,
    concurrency: int,
    splits: tuple[str, ...] = ("train", "val"),
    samples: int = 1,
    show_progress: bool = True,
    force: bool = False,
    retry_failed: bool = True,
) -> list[dict]:
    tasks = [t for t in load_tasks(tasks_file) if t.split in splits]
    if not tasks:
        raise TaskFileError(f"{tasks_file} has no tasks in the splits {', '.join(splits)}")
    check_workspaces(tasks, Path(tasks_file))
    jobs = []
    for task in tasks:
        for k in range(samples):
            key = task.id if samples == 1 else f"{task.id}#{k}"
            jobs.append((key, partial(_episode, task, Path(tasks_file), policy, sandbox, max_turns, key)))
    inputs = {
        "policy": policy.name,
        "tasks_sha256": file_sha256(tasks_file),
        "splits": sorted(splits),
        "samples": samples,
        "max_turns": max_turns,
    }
    return run_jobs(
        jobs,
        Path(out),
        concurrency,
        show_progress,
        f"collect ({policy.name})",
        provenance=inputs,
        force=force,
        retry_failed=retry_failed,
    )
