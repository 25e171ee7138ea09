"""GRPO measured by evaluation, not by its training curve: the policy's reward on its own tasks, sampled as GRPO
samples them (the recipe's temperature, the same rollout code and Scorer), before and after training, and the
paired difference with a 95% interval over tasks.

A training curve of one task a step mixes task order with learning, and a group whose rollouts all score alike
gives no gradient; so the tasks can also be chosen for spread: a seeded draw of candidates, each sampled a few
times by the starting policy, keeping those whose rewards differ most (`select_by_spread`). The before-figures
are then sampled afresh, so that choosing tasks for their spread does not bias the comparison."""

from __future__ import annotations

import statistics
from collections.abc import Callable
from dataclasses import dataclass

from terminus.stats import mean_interval


def paired_interval(before: dict[str, float], after: dict[str, float]) -> dict:
    """Mean of the per-task differences (after - before) and its 95% t interval over tasks: tasks are the unit,
    since samples of one task are not independent of each other."""
    if set(before) != set(after):
        raise ValueError(f"before and after cover different tasks: {sorted(set(before) ^ set(after))}")
    diffs = [after[t] - before[t] for t in sorted(before)]
    if len(diffs) < 2:
        raise ValueError(f"a paired interval needs at least 2 tasks, not {len(diffs)}")
    mean, half = mean_interval(diffs)
    return {"diff": round(mean, 4), "ci95": [round(mean - half, 4), round(mean + half, 4)]}


@dataclass
class Sampled:
    """Per task: the rewards of its samples, and the episodes' facts, final answers, turns."""

    rewards: dict[str, list[float]]
    recall: dict[str, list[float]]
    final_answer: dict[str, list[float]]
    turns: dict[str, list[int]]

    def means(self) -> dict[str, float]:
        return {t: statistics.fmean(r) for t, r in sorted(self.rewards.items())}

    def summary(self) -> dict:
        def mean(table: dict) -> float:
            return round(statistics.fmean(v for vs in table.values() for v in vs), 4)

        return {
            "reward": mean(self.rewards),
            "fact_recall": mean(self.recall),
            "final_answer_rate": mean(self.final_answer),
            "turns": mean(self.turns),
            "per_task": {t: round(m, 4) for t, m in self.means().items()},
        }


def sample(run: Callable[[list[str]], list[dict]], score: Callable[[list[dict]], list[dict]], task_ids: list[str],
           samples: int) -> Sampled:  # fmt: skip
    """`samples` episodes of each task, all in one lockstep batch (`run` takes the task id of each episode and
    returns their trajectory records), scored by `score` (the Scorer's verdicts)."""
    ids = [t for t in task_ids for _ in range(samples)]
    records = run(ids)
    verdicts = score(records)
    out = Sampled({t: [] for t in task_ids}, {t: [] for t in task_ids}, {t: [] for t in task_ids},
                  {t: [] for t in task_ids})  # fmt: skip
    for task_id, record, verdict in zip(ids, records, verdicts, strict=True):
        out.rewards[task_id].append(float(verdict["reward"]))
        out.recall[task_id].append(float(verdict["fact_recall"]))
        out.final_answer[task_id].append(float(record["termination"] == "final_answer"))
        out.turns[task_id].append(len(record["turns"]))
    return out


def select_by_spread(sampled: Sampled, keep: int) -> list[str]:
    """The `keep` tasks whose sampled rewards vary most (population std, ties by id); tasks whose samples all
    scored alike are never kept, since their group advantage is zero."""
    spread = {t: statistics.pstdev(r) for t, r in sampled.rewards.items()}
    ranked = sorted((t for t, s in spread.items() if s > 0), key=lambda t: (-spread[t], t))
    return sorted(ranked[:keep])


def report(before: Sampled, after: Sampled, samples: int) -> dict:
    """`{tasks, samples_per_task, before, after, diff, ci95}` (rewards), plus each side's details."""
    interval = paired_interval(before.means(), after.means())
    return {
        "tasks": len(before.rewards),
        "samples_per_task": samples,
        "before": before.summary()["reward"],
        "after": after.summary()["reward"],
        **interval,
        "task_ids": sorted(before.rewards),
        "details": {"before": before.summary(), "after": after.summary()},
    }
