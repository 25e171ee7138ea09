"""`terminus tasks validate`: before any training, the scripted expert runs every task and the fact checker
confirms that its final answer states the task's ground truth. Tasks whose facts cannot be reproduced here are
dropped and counted (the verifier must accept the gold answer before anything learns from it)."""

from __future__ import annotations

import os
from functools import partial
from pathlib import Path

from terminus.collect.provenance import file_sha256
from terminus.collect.runner import check_workspaces, run_episode, run_jobs
from terminus.io import drop_report, write_json_atomic
from terminus.judge.facts import check, observations_of
from terminus.models.scripted import ScriptedPolicy
from terminus.sandbox.spec import SandboxSpec
from terminus.tasks.record import Task, load_tasks, write_tasks


def _episode(task: Task, tasks_file: Path, sandbox: SandboxSpec, max_turns: int) -> dict:
    return run_episode(task, tasks_file, ScriptedPolicy(), sandbox=sandbox, max_turns=max_turns).to_dict()


def validate_tasks(
    tasks_file: Path,
    out: Path,
    report_path: Path,
    *,
    sandbox: SandboxSpec,
    max_turns: int,
    concurrency: int,
    show_progress: bool = True,
    force: bool = False,
) -> dict:
    tasks_file, out = Path(tasks_file), Path(out)
    tasks = load_tasks(tasks_file)
    check_workspaces(tasks, tasks_file)
    trajectories = report_path.with_name(report_path.stem + ".trajectories.jsonl")
    jobs = [(t.id, partial(_episode, t, tasks_file, sandbox, max_turns)) for t in tasks]
    inputs = {"policy": "scripted", "tasks_sha256": file_sha256(tasks_file)}
    records = {
        r["id"]: r
        for r in run_jobs(jobs, trajectories, concurrency, show_progress, "validate", provenance=inputs, force=force)
    }
    kept, dropped = [], {}
    for task in tasks:
        traj = records[task.id]
        if traj["termination"] != "final_answer":
            dropped[task.id] = f"expert ended with {traj['termination']}: {traj.get('error') or ''}".strip(": ")
            continue
        verdict = check(traj["final_answer"], task.facts, task.task_type, observations_of(traj["messages"]))
        if verdict.recall < 1.0 or verdict.precision < 1.0:
            dropped[task.id] = f"ground truth not reproduced: missing {verdict.missing}, wrong {verdict.wrong}"
            continue
        kept.append(task)
    # Workspaces are relative to the task file: keep them valid if the output lives elsewhere.
    for task in kept:
        if task.workspace:
            absolute = (tasks_file.parent / task.workspace).resolve()
            task.workspace = os.path.relpath(absolute, out.parent.resolve())
    write_tasks(out, kept)
    report = drop_report(
        "tasks", tasks, len(kept), dropped, lambda t: t.id, type=lambda t: t.task_type, source=lambda t: t.source
    )
    write_json_atomic(report_path, report)
    return report
