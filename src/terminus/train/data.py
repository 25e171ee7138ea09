"""`terminus sft-data`: teacher trajectories -> a Hugging Face dataset of chat conversations with `tools` and
assistant `tool_calls`, in the form TRL's SFTTrainer consumes as is (assistant-only loss through the chat
template's generation markers).

Filtering: a trajectory is kept when it ended with a final answer that the fact checker finds complete and
correct (recall and precision at least the thresholds, nothing hallucinated) and, when judge verdicts are
given, when its combined reward reaches `min_reward`.
"""

from __future__ import annotations

import json
import logging
import shutil
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from terminus.agent import trajectory
from terminus.agent.terminal import TERMINAL_TOOL
from terminus.io import read_jsonl, write_json_atomic
from terminus.judge import verdict as verdict_record
from terminus.judge.facts import check, observations_of
from terminus.tasks.record import Task, load_tasks
from terminus.timing import model_view
from terminus.train import TrainingInputError
from terminus.train.augment import renamed_copies
from terminus.train.fit import LengthReport, fit

log = logging.getLogger(__name__)


def to_chat(trajectory: dict) -> list[dict]:
    """Messages with one fixed set of keys (Arrow needs one schema): role, content, tool_calls, name; tool output as
    the model reads it (`model_view`: timing text normalised)."""
    out = []
    for message in model_view(trajectory["messages"]):
        calls = None
        if message.get("tool_calls"):
            calls = []
            for call in message["tool_calls"]:
                fn = call.get("function", call)
                args = fn.get("arguments", {})
                arguments = args if isinstance(args, str) else json.dumps(args)
                calls.append({"type": "function", "function": {"name": fn["name"], "arguments": arguments}})
        out.append(
            {
                "role": message["role"],
                "content": message.get("content") or "",
                "tool_calls": calls,
                "name": message.get("name") if message["role"] == "tool" else None,
            }
        )
    return out


@dataclass(frozen=True)
class KeepRule:
    """Which teacher trajectories become training data: a final answer the fact checker finds complete and correct
    (recall and precision at least these, nothing hallucinated) and, with judge verdicts, a reward at least this."""

    min_recall: float = 1.0
    min_precision: float = 1.0
    min_reward: float = 0.5


def keep(traj: dict, task: Task, rule: KeepRule, verdict: dict | None) -> tuple[bool, str]:
    if traj.get("termination") != "final_answer":
        return False, f"termination {traj.get('termination')}"
    fc = check(traj.get("final_answer"), task.facts, task.task_type, observations_of(traj["messages"]))
    if fc.recall < rule.min_recall:
        return False, "fact recall"
    if fc.precision < rule.min_precision:
        return False, "fact precision"
    if fc.hallucinated:
        return False, "hallucinated claims"
    if verdict is not None and verdict.get("reward", 0.0) < rule.min_reward:
        return False, "judge reward"
    return True, ""


def sft_row(traj: dict, task: Task) -> dict:
    """One training conversation: the tools block on every turn, the final answer's too, as the loop sends it."""
    return {
        "id": traj["id"],
        "task_id": task.id,
        "language": task.language,
        "task_type": task.task_type,
        "source": task.source,
        "messages": to_chat(traj),
        "tools": [TERMINAL_TOOL],
    }


def decision_cut(messages: list[dict]) -> list[dict] | None:
    """The conversation cut after the command that follows the first tool output (the listing): the turn on which the
    episode's facts depend. None when no command follows the first output."""
    k = next((i for i, m in enumerate(messages) if m["role"] == "tool"), None)
    if k is None or k + 1 >= len(messages) or not messages[k + 1].get("tool_calls"):
        return None
    return messages[: k + 2]


def build_sft_dataset(
    trajectories: Path,
    tasks_file: Path,
    out: Path,
    *,
    verdicts: Path | None = None,
    rule: KeepRule = KeepRule(),
    augment: int = 0,
    decision_copies: int = 0,
    seed: int = 0,
    tokenizer=None,
    max_length: int | None = None,
) -> dict:
    """The dataset, plus `augment` renamed copies of each training conversation (`train.augment`; never of the
    validation split, which measures the real conversations), plus `decision_copies` copies of each training
    conversation (renamed ones included) cut after its decision turn (`decision_cut`). With `max_length` (the SFT
    recipe's) and the recipe's `tokenizer`, every conversation is made to fit it with its end whole
    (`train.fit`), and counts.json's `length` says how many were over it, shortened and dropped."""
    if (tokenizer is None) != (max_length is None):
        raise ValueError("build_sft_dataset needs both the recipe's tokenizer and its max_length, or neither")
    from datasets import Dataset, DatasetDict

    tasks = {t.id: t for t in load_tasks(tasks_file)}
    verdict_rows = read_jsonl(verdicts, verdict_record.FIELDS, required=verdict_record.REQUIRED) if verdicts else []
    by_verdict = {v["trajectory_id"]: v for v in verdict_rows}
    rows: dict[str, list[dict]] = {"train": [], "validation": []}
    dropped: Counter = Counter()
    kept_tasks: list[Task] = []
    augmented = 0
    decisions: list[dict] = []
    for traj in read_jsonl(trajectories, trajectory.FIELDS, required=("id", "task_id", "messages")):
        task = tasks.get(traj.get("task_id"))
        if task is None:
            dropped["unknown task"] += 1
            continue
        ok, why = keep(traj, task, rule, by_verdict.get(traj["id"]) if verdicts else None)
        if not ok:
            dropped[why] += 1
            continue
        split = "validation" if task.split == "val" else "train" if task.split == "train" else None
        if split is None:
            dropped["test split (never trained on)"] += 1
            continue
        row = sft_row(traj, task)
        rows[split].append(row)
        kept_tasks.append(task)
        if split != "train":
            continue
        renamed = []
        if augment:
            copies = renamed_copies(row["messages"], augment, f"{seed}:{traj['id']}")
            renamed = [{**row, "id": f"{row['id']}~{k}", "messages": m} for k, m in enumerate(copies, 1)]
            rows[split] += renamed
            augmented += len(renamed)
        if decision_copies:
            for conv in [row, *renamed]:
                if cut := decision_cut(conv["messages"]):
                    decisions += [
                        {**conv, "id": f"{conv['id']}@decision{k}", "messages": cut}
                        for k in range(1, decision_copies + 1)
                    ]
    rows["train"] += decisions
    length = LengthReport(max_length) if max_length is not None else None
    if length is not None:
        for name in rows:
            rows[name] = [r for r in (fit(tokenizer, row, max_length, length) for row in rows[name]) if r is not None]
        if length.dropped_ids:
            log.warning("dropped %d conversations over max_length %d even with their tool outputs shortened: %s",
                        length.dropped, max_length, ", ".join(length.dropped_ids[:10]))  # fmt: skip
    if not rows["train"]:
        raise TrainingInputError(f"no trajectory of {trajectories} passes the filter (dropped: {dict(dropped)})")
    data = DatasetDict({name: Dataset.from_list(r) for name, r in rows.items() if r})
    out = Path(out)
    staging = out.with_name(out.name + ".tmp")
    shutil.rmtree(staging, ignore_errors=True)
    data.save_to_disk(str(staging))  # then swapped in: a reader never sees half a dataset
    counts = {
        "train": len(rows["train"]),
        "validation": len(rows["validation"]),
        "augmented": augmented,
        "dropped": dict(dropped),
        "by_language": dict(sorted(Counter(t.language for t in kept_tasks).items())),
        "by_type": dict(sorted(Counter(t.task_type for t in kept_tasks).items())),
        "by_source": dict(sorted(Counter(t.source for t in kept_tasks).items())),
    }
    if decision_copies:  # only when asked: configs without it keep their counts.json as it was
        counts["decision_copies"] = len(decisions)
    if length is not None:
        counts["length"] = length.to_dict()
    write_json_atomic(staging / "counts.json", counts)
    shutil.rmtree(out, ignore_errors=True)
    staging.rename(out)
    return counts
