"""What `terminus view` shows, read and checked: the sections and episodes of a trajectories file, an eval cell or a
run folder (`load`), and an episode's commands as both the demo and the pages show them (`command_steps`). No HTML
here: `terminus.view.site` renders these through the templates.

Inputs, recognised by their records' `schema`:
- trajectories (`terminus.trajectory/1`, JSON lines, or one JSON object as `terminus exec --trajectory` writes):
  query, each command with its exit status, timing and output, the final answer, and the verdict where one exists
  (`--verdicts`, or the run's `judge/teacher_verdicts.jsonl`) with the facts found and missed (from `--tasks`, or
  the run's task file);
- eval records (`terminus.eval/1`: `eval/cells/<cell>.jsonl` or `eval/records.jsonl`): the main agent's turns and
  tokens beside the subagent's, each subagent call's query, commands and answer, and the episode's scores;
- a run folder (`results/<run>/` or `results/cached/`): every one of those files it holds.
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from terminus.agent import trajectory
from terminus.errors import TerminusError
from terminus.eval import record as eval_record
from terminus.io import check_record, read_jsonl
from terminus.judge import verdict as verdict_record
from terminus.judge.facts import required_facts
from terminus.tasks.record import load_tasks

TRAJECTORY, EVAL = "terminus.trajectory", "terminus.eval"
# The run folder's files, in the order the index shows them.
RUN_TRAJECTORIES = (
    ("collect/trajectories.jsonl", "teacher rollouts (collect)"),
    ("tasks/valid.validation.trajectories.jsonl", "the scripted expert's validation episodes"),
)
RUN_VERDICTS = ("judge/teacher_verdicts.jsonl",)
RUN_TASKS = ("tasks/valid.jsonl", "tasks/tasks.jsonl")
_ELIDED = re.compile(r"\[\.\.\. (\d+) (lines?|bytes) of output elided \.\.\.\]")
_EXIT = re.compile(r"\n?\[exit code (-?\d+)\]\s*$")


class ViewError(TerminusError, ValueError):
    """The path given to `terminus view` holds nothing it can show."""


@dataclass
class Episode:
    kind: str  # "trajectory" | "eval"
    record: dict
    verdict: dict | None = None
    facts: dict | None = None  # {"found": [...], "missed": [...]} where the task's facts are known
    page: str = ""


@dataclass
class Section:
    title: str
    source: str
    episodes: list[Episode] = field(default_factory=list)


# -- reading ---------------------------------------------------------------------------------------------------
def _records(path: Path) -> list[dict]:
    """The records of a trajectories or eval file, each checked against its kind's field types (`_fields`): a line
    the pages could not show is an error naming the file and the line, never a traceback halfway through."""
    try:
        text = path.read_bytes().decode("utf-8")
    except UnicodeDecodeError:
        text = ""  # read_jsonl names the line
    stripped = text.strip()
    if stripped.startswith("{") and "\n{" not in stripped:  # one JSON object (exec --trajectory) or one line
        try:
            record = json.loads(stripped)
        except json.JSONDecodeError:
            pass
        else:
            line = text[: text.index("{")].count("\n") + 1  # where the object starts
            return [check_record(record, _fields(record), f"{path}:{line}")]
    return read_jsonl(path, _fields)


def _fields(record: dict) -> dict | None:
    kind = _kind(record) if isinstance(record, dict) else None
    return trajectory.FIELDS if kind == "trajectory" else eval_record.FIELDS if kind == "eval" else None


def _kind(record: dict) -> str | None:
    if not isinstance(record, dict):
        return None
    schema = str(record.get("schema", ""))
    if schema.startswith(TRAJECTORY) or ("messages" in record and "turns" in record):
        return "trajectory"
    if schema.startswith(EVAL) or "subagent_episodes" in record:
        return "eval"
    return None


def _tasks(path: Path | None) -> dict[str, tuple[str, dict]]:
    """task id -> (task type, facts), from a task file (read and checked as every stage reads one)."""

    if path is None or not path.is_file():
        return {}
    return {t.id: (t.task_type, t.facts) for t in load_tasks(path)}


def _facts(verdict: dict | None, task: tuple[str, dict] | None) -> dict | None:
    """The required facts an answer stated and those it missed, from the verdict's `missing` and the task."""
    if verdict is None or task is None:
        return None

    required = [f"{kind}={value}" for kind, value in required_facts(*task)]
    missing = list(verdict.get("missing") or [])
    return {"found": [f for f in required if f not in missing], "missed": missing}


def load(path: Path, verdicts: Path | None = None, tasks: Path | None = None) -> list[Section]:
    """The sections `terminus view PATH` shows, in order."""
    path = Path(path)
    if not path.exists():
        raise ViewError(f"{path} does not exist: give a trajectories file, an eval cell file or a run folder")
    run = path if path.is_dir() else None
    if run is None and path.parent.name in ("collect", "cells", "eval", "tasks", "training"):
        run = path.parent.parent if path.parent.name != "cells" else path.parent.parent.parent
    tasks = tasks or next((run / t for t in RUN_TASKS if run and (run / t).is_file()), None)
    verdicts = verdicts or next((run / v for v in RUN_VERDICTS if run and (run / v).is_file()), None)
    task_facts = _tasks(tasks)
    verdict_rows = read_jsonl(verdicts, verdict_record.FIELDS) if verdicts and verdicts.is_file() else []
    by_trajectory = {v.get("trajectory_id"): v for v in verdict_rows}

    files: list[tuple[Path, str]] = []
    if path.is_dir():
        files += [(path / f, title) for f, title in RUN_TRAJECTORIES if (path / f).is_file()]
        files += [(p, f"held-out episodes: {p.stem.removeprefix('held_out_')}") for p in
                  sorted((path / "training").glob("held_out_*.jsonl"))]  # fmt: skip
        cells = sorted((path / "eval" / "cells").glob("*.jsonl"))
        if cells:
            files += [(p, f"eval cell {p.stem}") for p in cells]
        elif (path / "eval" / "records.jsonl").is_file():
            files.append((path / "eval" / "records.jsonl", ""))
    else:
        files.append((path, ""))

    sections: list[Section] = []
    for file, title in files:
        rows = _records(file)
        kinds = {_kind(r) for r in rows}
        if None in kinds or len(kinds) > 1:
            raise ViewError(f"{file} holds records that are neither trajectories nor eval records")
        if "eval" in kinds and not title:  # a merged records file: one section per cell
            cells: dict[str, list[dict]] = defaultdict(list)
            for row in rows:
                cells[cell_of(row)].append(row)
            for cell, members in cells.items():
                sections.append(Section(f"eval cell {cell}", str(file), [Episode("eval", r) for r in members]))
            continue
        section = Section(title or f"trajectories: {file.name}", str(file))
        for row in rows:
            if "eval" in kinds:
                section.episodes.append(Episode("eval", row))
                continue
            verdict = by_trajectory.get(row.get("id"))
            section.episodes.append(
                Episode("trajectory", row, verdict, _facts(verdict, task_facts.get(row.get("task_id"))))
            )
        sections.append(section)
    if not any(s.episodes for s in sections):
        raise ViewError(f"{path} holds no episodes (no trajectories, eval cells or eval records)")
    return sections


# -- the episode, as both the demo and the viewer show it ------------------------------------------------------
def command_steps(trajectory: dict) -> list[dict]:
    """Each command of an episode with what it printed: the turns paired with the tool messages, in order."""
    outputs = [m.get("content") or "" for m in trajectory.get("messages", []) if m.get("role") == "tool"]
    steps = []
    for turn, output in zip(trajectory.get("turns", []), outputs, strict=False):
        elided = _ELIDED.search(output)
        steps.append(
            {
                "command": turn.get("command", ""),
                "exit_code": turn.get("exit_code"),
                "duration_s": float(turn.get("duration_s") or 0.0),
                "timeout_ms": turn.get("timeout_ms"),
                "timed_out": bool(turn.get("timed_out")),
                "output": _EXIT.sub("", output),
                "lines": len(output.splitlines()),
                "elided": elided.group(0) if elided else None,
            }
        )
    return steps


def status(step: dict) -> str:
    """How a command ended, in a few words: `exit 1`, `timed out`, `killed (no exit status)`."""
    if step["timed_out"]:
        return "timed out"
    return "killed (no exit status)" if step["exit_code"] is None else f"exit {step['exit_code']}"


def cell_of(record: dict) -> str:
    """The grid cell an eval record belongs to, named as `terminus.eval.cells` names it (records from before the
    context axis ran under the full context)."""
    parts = [record.get("main_agent"), record.get("subagent"), record.get("context") or "full"]
    return "__".join(str(p) for p in [*parts, record.get("benchmark"), record.get("seed")])
