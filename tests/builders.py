"""What many tests build the same way: command lines, task records over snapshot folders, a synthetic corpus, and a
run killed with SIGKILL while it works."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import yaml

from terminus.config import load_config
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
    build_corpus(load_config(root / "config.yaml"), root / "tasks.jsonl", show_progress=False)
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
