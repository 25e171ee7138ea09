"""What many tests build the same way: command lines, task records over snapshot folders, a synthetic corpus, and a
run killed with SIGKILL while it works."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import yaml

from terminus.runspec import load_run
from terminus.tasks.build import build_corpus
from terminus.tasks.record import Task

TERMINUS = str(Path(sys.executable).parent / "terminus")  # the installed command, for real processes


def cli_args(command: str, **options: object) -> list[str]:
    """The argv of `terminus <command>` after the program name: each option becomes its flag, `max_retries=0` as
    `--max-retries 0`, `quiet=True` as `--quiet`, in the order given."""
    args = command.split()
    for name, value in options.items():
        flag = "--" + name.replace("_", "-")
        args += [flag] if value is True else [flag, str(value)]
    return args


def write_files(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)


def task(**fields: object) -> Task:
    """A task record with what a test leaves out filled in: a synthetic Python test-execution task with no facts."""
    defaults = {
        "id": "t0",
        "language": "python",
        "source": "synthetic",
        "repo": "r0",
        "task_type": "test-execution",
        "query": "list the files",
        "facts": {},
    }
    return Task(**(defaults | fields))


def snapshot_task(root: Path, repo: str, files: dict[str, str], **fields: object) -> Task:
    """A task (see `task`) over its snapshot folder root/repos/<repo>, written with `files`; the task file goes in
    `root`, since workspaces are relative to it."""
    write_files(root / "repos" / repo, files)
    return task(repo=repo, workspace=f"repos/{repo}", **fields)


def synthetic_corpus(root: Path, synthetic: dict, splits: dict | None = None, **sections: object) -> Path:
    """root/tasks.jsonl: the corpus of root/config.yaml, synthetic projects only (`synthetic`, `splits` go under
    `tasks`; `sections` are the config's other top-level keys, `run` among them)."""
    tasks = {"synthetic": synthetic, "registry": {"enabled": False}} | ({"splits": splits} if splits else {})
    (root / "config.yaml").write_text(yaml.safe_dump({"run": "t", "tasks": tasks} | sections))
    build_corpus(load_run(root / "config.yaml"), root / "tasks.jsonl", show_progress=False)
    return root / "tasks.jsonl"


def kill_when(command: list[str], ready: Callable[[], bool], env: dict | None = None, wait_s: float = 120) -> int:
    """Start `command` in its own session, SIGKILL its whole group as soon as `ready()` holds (or after wait_s),
    and return its PID."""
    proc = subprocess.Popen(
        command, start_new_session=True, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    deadline = time.time() + wait_s
    while time.time() < deadline and not ready():
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    return proc.pid


def lines_done(path: Path) -> int:
    """How many lines a file that a run appends to holds so far (0 before it exists)."""
    return len(path.read_text().splitlines()) if path.exists() else 0


def descendants(pid: int) -> list[int]:
    """Every process below `pid` (from /proc: the test needs the job's PID, not the workflow's)."""
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    out, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            out.append(child)
            todo.append(child)
    return out


def cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


def kill_job(workflow_pid: int, marker: str) -> int:
    """SIGKILL the job under a running snakemake whose command line holds `marker`, with everything it started (what
    slurm does to a job at its time limit; snakemake itself lives on and sees the job fail). Returns how many
    processes were killed."""
    jobs = [p for p in descendants(workflow_pid) if marker in cmdline(p)]
    victims = [p for job in jobs for p in (job, *descendants(job))]
    for pid in victims:
        with contextlib.suppress(ProcessLookupError):  # it ended on its own meanwhile
            os.kill(pid, signal.SIGKILL)
    return len(victims)


def arm_record(
    arm: str, task: str, resolved, *, cost=None, tokens=None, task_type="build", seed=0, benchmark="repair"
) -> dict:
    """An eval record of the arm `<main>__<sub>__<context>` on `task`, with the fields the arms' analyses read."""
    main, sub, context = arm.split("__")
    return {
        "benchmark": benchmark,
        "main_agent": main,
        "subagent": sub,
        "context": context,
        "seed": seed,
        "task_id": task,
        "task_type": task_type,
        "resolved": resolved,
        "main_agent_tokens": tokens,
        "subagent_tokens": 0,
        "total_tokens": tokens,
        "cost_usd": cost,
        "error": None,
    }
