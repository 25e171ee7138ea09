"""GRPO measured by evaluation, not by its training curve: the policy's reward on its own tasks, sampled as GRPO
samples them (the recipe's temperature, the same rollout code and Scorer), before and after training, and the
paired difference with a 95% interval over tasks.

A training curve of one task a step mixes task order with learning, and a group whose rollouts all score alike
gives no gradient; so the tasks can also be chosen for spread: a seeded draw of candidates, each sampled a few
times by the starting policy, keeping those whose rewards differ most (`select_by_spread`). The before-figures
are then sampled afresh, so that choosing tasks for their spread does not bias the comparison."""

from __future__ import annotations

import json
import logging
import statistics
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

from terminus.collect.provenance import file_sha256, model_stamp
from terminus.io import write_json_atomic
from terminus.judge.form import usable_answer
from terminus.stats import mean_interval
from terminus.train import TrainingInputError, infra
from terminus.train.rollout import episode_calls, run_policy

log = logging.getLogger(__name__)


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
    """Per task: the rewards of its samples, and the episodes' facts, final answers, turns and usable answers (parsed,
    ran its commands, no markup: judge.form.usable_answer; issue 45 reports it beside every final-answer rate)."""

    rewards: dict[str, list[float]]
    recall: dict[str, list[float]]
    final_answer: dict[str, list[float]]
    turns: dict[str, list[int]]
    usable: dict[str, list[float]] = field(default_factory=dict)  # absent from a state saved before it was kept

    def means(self) -> dict[str, float]:
        return {t: statistics.fmean(r) for t, r in sorted(self.rewards.items())}

    def summary(self) -> dict:
        def mean(table: dict) -> float:
            return round(statistics.fmean(v for vs in table.values() for v in vs), 4)

        return {
            "reward": mean(self.rewards),
            "fact_recall": mean(self.recall),
            "final_answer_rate": mean(self.final_answer),
            "usable_answer_rate": mean(self.usable) if any(self.usable.values()) else None,
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
        commands = [t["command"] for t in record["turns"]]
        out.usable.setdefault(task_id, []).append(float(usable_answer(record.get("final_answer"), commands)))
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


class Measure:
    """GRPO's tasks chosen for spread and scored before and after training, by the functions above.
    What is measured before training is kept in <output_dir>/before_after.json, so that a resubmitted job resumes
    with the same tasks and before-figures rather than sampling them again from a model that has moved on."""

    def __init__(
        self, trainer, model_id: str, tasks: dict, tasks_file: Path, script_args, sandbox, scorer, seed: int
    ) -> None:
        self.trainer, self.tasks, self.tasks_file, self.args = trainer, tasks, tasks_file, script_args
        self.sandbox, self.scorer, self.seed = sandbox, scorer, seed
        self.path = Path(trainer.args.output_dir) / "before_after.json"

        # what the measurements depend on: a state of other inputs (a model trained again since) is not reused
        inputs = {
            "model": model_stamp(model_id),
            "tasks_sha256": file_sha256(tasks_file),
            "seed": seed,
            **{k: getattr(script_args, k) for k in ("splits", "max_turns", "max_new_tokens", "max_tasks",
                                                     "spread_candidates", "spread_samples", "before_after_samples",
                                                     "measure_split", "measure_tasks")},
            "temperature": trainer.args.temperature,
            "max_completion_length": trainer.args.max_completion_length,  # when a turn must be the last
        }  # fmt: skip
        state = json.loads(self.path.read_text()) if self.path.is_file() else {}
        self.state = state if state.get("inputs") == inputs else {"inputs": inputs}

    def _sample(self, task_ids: list[str], samples: int, tag: str, offset: int):
        """Seeded samples of the policy as it is now, in lockstep batches of 16 episodes; torch's random state is
        put back afterwards, so that training samples what it would have without the measurement."""
        import torch

        state = torch.random.get_rng_state()
        torch.manual_seed(self.seed * 1000 + offset)

        def run(ids: list[str]) -> list[dict]:
            records = []
            for start in range(0, len(ids), 16):
                chunk = ids[start : start + 16]
                calls = episode_calls(self.tasks, self.tasks_file, self.args, self.sandbox, chunk, f"{tag}{start}")
                run = run_policy(self.trainer, calls, self.args, f"grpo-{tag}")
                records += [t.to_dict() for t in run.trajectories]
            # a measurement is not a training step: an episode that could not run would count as a 0, so it stops
            failed = next((r for r in records if infra.infra_failure(r)), None)
            if failed is not None:
                raise infra.InfraFailureError(f"GRPO's {tag} measurement: episode {failed['id']}: {failed['error']}")
            return records

        try:
            return sample(run, self.scorer.score, task_ids, samples)
        finally:
            torch.random.set_rng_state(state)

    def _save(self) -> None:
        write_json_atomic(self.path, self.state)

    def select(self, keep: int, among: list[str] | None = None) -> list[str]:
        """The `keep` tasks of `among` (default: all this measure knows) whose sampled rewards differ most."""
        among = sorted(among if among is not None else self.tasks)
        if "selected" not in self.state:
            sampled = self._sample(among, self.args.spread_samples, "spread", 1)
            self.state["selection"] = {"candidates": len(among), "samples_per_task": self.args.spread_samples,
                                       "rewards": sampled.rewards}  # fmt: skip
            self.state["selected"] = select_by_spread(sampled, keep)
            self._save()
        if not self.state["selected"]:
            raise TrainingInputError(
                f"none of the {len(among)} candidate tasks' rewards differ over {self.args.spread_samples} "
                "samples of the starting policy: GRPO would get no gradient (more candidates or samples)"
            )
        log.info("training on %d tasks chosen for spread: %s", len(self.state["selected"]), self.state["selected"])
        return self.state["selected"]

    def before(self, task_ids: list[str]):
        if not self.args.before_after_samples:
            return None
        if self.state.get("before_ids") != sorted(task_ids):
            sampled = self._sample(sorted(task_ids), self.args.before_after_samples, "before", 2)
            self.state.update(before_ids=sorted(task_ids), before=asdict(sampled))
            self._save()
        return Sampled(**self.state["before"])

    def after(self, before) -> dict:
        after = self._sample(sorted(before.rewards), self.args.before_after_samples, "after", 3)
        self.state["after"] = asdict(after)
        self.state["report"] = report(before, after, self.args.before_after_samples)
        self._save()
        r = self.state["report"]
        log.info("before/after GRPO on its %d tasks: %.3f -> %.3f, diff %.3f, 95%% CI %s", r["tasks"], r["before"],
                 r["after"], r["diff"], r["ci95"])  # fmt: skip
        return r
