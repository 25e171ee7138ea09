"""`terminus dataset export --run RUN_FOLDER --out DIR`: the episodes a run folder holds as a Hugging Face `datasets`
folder (`DatasetDict.save_to_disk`), with a dataset card (README.md) and a provenance stamp.

- `train`, `validation`, `test`: the teacher's trajectories (`collect/trajectories.jsonl`, what SFT trains on), each
  in the split of its task, and the split is by repository (`terminus tasks build` never puts one repository's tasks
  in two splits), so a model trained on `train` has not seen a `test` repository.
- `eval`: the evaluation grid's episodes (`eval/records.jsonl`): one main-agent episode (or forwarded query) per
  row, with the subagent calls it made.
A folder holds what its run kept: `results/cached/` has the eval records and no teacher trajectories, a run folder
both. Nested fields (messages, turns, answers, facts) are JSON text, so every row has one schema whatever its task.
"""

from __future__ import annotations

import json
from pathlib import Path

from terminus.errors import TerminusError
from terminus.io import read_jsonl, write_json_atomic, write_text_atomic

LICENCE = "apache-2.0"
TASK_SPLITS = {"train": "train", "val": "validation", "test": "test"}
TRAJECTORY_FIELDS = (
    "id", "task_id", "policy", "backend", "query", "description", "termination", "prompt_tokens",
    "completion_tokens", "format_errors",
)  # fmt: skip
TRAJECTORY_JSON = ("messages", "turns", "final_answer")
EVAL_FIELDS = (
    "key", "main_agent", "subagent", "context", "benchmark", "seed", "task_id", "task_type", "language", "source",
    "resolved", "main_agent_tokens", "total_tokens", "subagent_calls", "error",
)  # fmt: skip
EVAL_JSON = ("subagent_episodes", "direct_commands")


class DatasetExportError(TerminusError, ValueError):
    """A run folder with nothing to export, or an output folder that is not empty."""


def _rows(records: list[dict], plain: tuple[str, ...], nested: tuple[str, ...], extra: dict | None = None) -> dict:
    columns: dict[str, list] = {name: [] for name in (*plain, *nested, *(extra or {}))}
    for r in records:
        for name in plain:
            value = r.get(name)
            columns[name].append(
                None if value is None else value if isinstance(value, int | float | bool) else str(value)
            )
        for name in nested:
            columns[name].append(json.dumps(r.get(name), sort_keys=True))
        for name, fn in (extra or {}).items():
            columns[name].append(fn(r))
    return columns


def export(run: Path, out: Path) -> dict:
    """Write `out` (a `datasets` folder and its card); returns {split: rows}."""
    from datasets import Dataset, DatasetDict

    run, out = Path(run), Path(out)
    if out.exists() and any(out.iterdir()):
        raise DatasetExportError(f"{out} is not empty; give a new folder (nothing was written)")
    splits: dict[str, Dataset] = {}
    trajectories = run / "collect" / "trajectories.jsonl"
    tasks_file = run / "tasks" / "valid.jsonl"
    if trajectories.is_file():
        if not tasks_file.is_file():
            raise DatasetExportError(f"{trajectories} has no task file beside it ({tasks_file}) to split it by")
        tasks = {t["id"]: t for t in read_jsonl(tasks_file)}
        records = read_jsonl(trajectories)
        for split, name in TASK_SPLITS.items():
            mine = [r for r in records if tasks.get(r["task_id"], {}).get("split") == split]
            if mine:
                extra = {
                    "repo": lambda r: str(tasks[r["task_id"]].get("repo", "")),
                    "task_type": lambda r: str(tasks[r["task_id"]].get("task_type", "")),
                    "language": lambda r: str(tasks[r["task_id"]].get("language", "")),
                    "facts": lambda r: json.dumps(tasks[r["task_id"]].get("facts"), sort_keys=True),
                }
                splits[name] = Dataset.from_dict(_rows(mine, TRAJECTORY_FIELDS, TRAJECTORY_JSON, extra))
    records_file = run / "eval" / "records.jsonl"
    if records_file.is_file():
        splits["eval"] = Dataset.from_dict(_rows(read_jsonl(records_file), EVAL_FIELDS, EVAL_JSON))
    if not splits:
        raise DatasetExportError(f"{run} holds no episodes to export (collect/trajectories.jsonl, eval/records.jsonl)")
    DatasetDict(splits).save_to_disk(str(out))
    stamp = _stamp(run)
    counts = {name: len(ds) for name, ds in splits.items()}
    write_json_atomic(out / "stamp.json", stamp | {"splits": counts})
    write_text_atomic(out / "README.md", card(counts, stamp, run))
    return counts


def _stamp(run: Path) -> dict:
    """The run's provenance: its stamp where a table carries one (training summary, eval records)."""
    for path in (run / "training" / "summary.json", run / "stamp.json"):
        if path.is_file():
            data = json.loads(path.read_text())
            found = {k: data.get(k) for k in ("git_commit", "config_hash", "run") if data.get(k)}
            if found:
                return found
    records = run / "eval" / "records.jsonl"
    if records.is_file():
        first = read_jsonl(records)[:1]
        if first:
            return {k: first[0].get(k) for k in ("git_commit", "config_hash", "run")}
    return {}


def card(counts: dict, stamp: dict, run: Path) -> str:
    rows = "\n".join(f"| `{name}` | {n} |" for name, n in counts.items())
    return f"""---
license: {LICENCE}
task_categories: [text-generation]
tags: [agents, tool-use, execution-subagent, terminus]
---

# terminus execution-subagent episodes

Exported by `terminus dataset export` from `{run.name}` (commit {stamp.get("git_commit", "unknown")}, config hash
{stamp.get("config_hash", "unknown")}; `stamp.json` has the stamp and the counts). Load with
`datasets.load_from_disk(folder)`.

| split | rows |
|---|---|
{rows}

## Splits

- `train`, `validation`, `test`: the teacher's (the scripted expert's, or the configured teacher model's)
  trajectories on the task corpus, each in its task's split. Splits are by repository: no repository has tasks in
  two of them.
- `eval`: the evaluation grid's episodes, one per cell and task (main agent x subagent x context x benchmark x seed).

## Fields

- Trajectories: `id`, `task_id`, `policy`, `backend`, `query`, `description`, `termination`, `prompt_tokens`,
  `completion_tokens`, `format_errors`; `messages`, `turns`, `final_answer` as JSON text (the chat as the subagent
  saw it, each command with its exit status and output size, the parsed `Command:`/`Summary:` pairs); the task's
  `repo`, `task_type`, `language` and `facts` (the ground truth the fact checker uses, JSON text).
- Eval: `key`, `main_agent`, `subagent`, `context`, `benchmark`, `seed`, `task_id`, `task_type`, `language`,
  `source`, `resolved`, `main_agent_tokens`, `total_tokens`, `subagent_calls`, `error`; `subagent_episodes` (each
  call's query, commands and answer) and `direct_commands` as JSON text.

## Licence and provenance

Apache-2.0, as the terminus repository. The synthetic repositories are generated by terminus; registry mutants
(`source`: registry) come from packages under their own licences, named in the task corpus.
"""
