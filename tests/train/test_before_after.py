"""GRPO measured before and after: the paired interval, the choice of tasks for spread, and the whole measurement
through `terminus grpo`'s main on a briefly SFT'd tiny model."""

from __future__ import annotations

import json
import statistics

import pytest

from terminus.stats import t975
from terminus.train import before_after as ba

from .helpers import run_grpo


def test_paired_interval_is_the_t_interval_of_per_task_differences():
    before = {"a": 0.1, "b": 0.2, "c": 0.3, "d": 0.0}
    after = {"a": 0.3, "b": 0.3, "c": 0.6, "d": 0.1}
    diffs = [0.2, 0.1, 0.3, 0.1]
    out = ba.paired_interval(before, after)
    half = 3.182 * statistics.stdev(diffs) / 2  # t(0.975, 3 df) * sd / sqrt(4)
    assert out["diff"] == pytest.approx(0.175, abs=1e-4)
    assert out["ci95"] == pytest.approx([0.175 - half, 0.175 + half], abs=1e-4)
    assert out["ci95"][0] > 0  # every task rose: the interval excludes zero
    flat = ba.paired_interval(before, {"a": 0.3, "b": 0.0, "c": 0.3, "d": 0.1})
    assert flat["ci95"][0] < 0 < flat["ci95"][1]  # mixed changes: it does not
    with pytest.raises(ValueError, match="different tasks"):
        ba.paired_interval(before, {"a": 1.0})
    with pytest.raises(ValueError, match="at least 2 tasks"):
        ba.paired_interval({"a": 0.0}, {"a": 1.0})
    assert t975(1) == 12.706 and t975(100) == 1.96


def test_selection_keeps_the_tasks_whose_samples_differ_most_and_never_a_flat_one():
    sampled = ba.Sampled(
        rewards={"flat": [0.5, 0.5, 0.5], "small": [0.4, 0.5, 0.45], "wide": [0.0, 1.0, 0.5], "mid": [0.1, 0.5, 0.3]},
        recall={}, final_answer={}, turns={},
    )  # fmt: skip
    assert ba.select_by_spread(sampled, 2) == ["mid", "wide"]
    assert ba.select_by_spread(sampled, 10) == ["mid", "small", "wide"]


def test_sample_scores_each_task_samples_times_in_one_batch():
    calls = []

    def run(ids):
        calls.append(list(ids))
        ends = ["max_turns", "final_answer"]
        answer = [{"command": "ls", "summary": "two files"}]  # usable where `ls` ran (every episode but the first)
        return [
            {"termination": ends[i % 2], "turns": [{"command": "ls"}] * i, "final_answer": answer if i % 2 else None}
            for i, _ in enumerate(ids)
        ]

    def score(records):
        return [{"reward": len(r["turns"]) / 10, "fact_recall": 0.5} for r in records]

    out = ba.sample(run, score, ["x", "y"], 3)
    assert calls == [["x", "x", "x", "y", "y", "y"]]
    assert out.rewards == {"x": [0.0, 0.1, 0.2], "y": [0.3, 0.4, 0.5]}
    assert out.final_answer["x"] == [0.0, 1.0, 0.0] and out.turns["y"] == [3, 4, 5]
    assert out.usable == {"x": [0.0, 1.0, 0.0], "y": [1.0, 0.0, 1.0]} and out.summary()["usable_answer_rate"] == 0.5
    report = ba.report(out, ba.Sampled({"x": [0.5], "y": [0.5]}, out.recall, out.final_answer, out.turns), 3)
    assert {"tasks", "samples_per_task", "before", "after", "diff", "ci95"} <= set(report)
    assert report["tasks"] == 2 and report["before"] == 0.25 and report["after"] == 0.5


@pytest.mark.slow
def test_grpo_chooses_tasks_for_spread_and_measures_before_and_after(briefly_sft_model, sft_data, tmp_path):
    """Through GRPO's main: tasks chosen for spread among a seeded draw, before- and after-figures sampled with the
    recipe's temperature and scored by the Scorer, the report written; a rerun resumes with the same choice."""
    tasks, _ = sft_data
    options = ["--spread_candidates", "4", "--spread_samples", "4", "--max_tasks", "2", "--before_after_samples", "3"]
    result = run_grpo(briefly_sft_model, tasks, tmp_path / "grpo", "--max_steps", "2", *options)
    state = json.loads((tmp_path / "grpo" / "before_after.json").read_text())
    report = result["before_after"]
    assert report == state["report"]
    assert report["tasks"] == len(state["selected"]) and report["samples_per_task"] == 3
    assert report["task_ids"] == state["selected"] == state["before_ids"]
    rewards = state["selection"]["rewards"]
    assert state["selection"]["candidates"] == len(rewards) == 4 and all(len(r) == 4 for r in rewards.values())
    assert all(statistics.pstdev(rewards[t]) > 0 for t in state["selected"])  # only tasks with a gradient
    assert all(len(v) == 3 for v in state["after"]["rewards"].values())
    assert report["ci95"][0] <= report["diff"] <= report["ci95"][1]
    # the GRPO steps trained on the chosen tasks only
    logs = [json.loads(x) for x in (tmp_path / "grpo" / "metrics.jsonl").read_text().splitlines()]
    assert len([r for r in logs if "reward" in r]) == 2
    # a resubmitted job resumes with the same tasks and before-figures instead of sampling them again
    before = state["before"]
    (tmp_path / "grpo" / "final").rename(tmp_path / "grpo" / "final-1")
    again = run_grpo(briefly_sft_model, tasks, tmp_path / "grpo", "--max_steps", "2", *options)
    state2 = json.loads((tmp_path / "grpo" / "before_after.json").read_text())
    assert state2["selected"] == state["selected"] and state2["before"] == before
    assert again["before_after"]["before"] == report["before"]


@pytest.mark.slow
def test_grpo_measures_on_held_out_tasks_with_shuffled_rewards(briefly_sft_model, sft_data, tmp_path):
    """The copy control's L2 options through GRPO's main: before and after on a seeded draw of another split's
    tasks (which the Scorer must know: the first control run stopped on a KeyError there), with each group's
    rewards shuffled."""
    from terminus.tasks.record import load_tasks

    tasks, _ = sft_data
    options = ["--max_tasks", "2", "--before_after_samples", "2", "--measure_split", "val", "--measure_tasks", "2",
               "--shuffle_rewards", "true"]  # fmt: skip
    result = run_grpo(briefly_sft_model, tasks, tmp_path / "grpo", "--max_steps", "1", *options)
    state = json.loads((tmp_path / "grpo" / "before_after.json").read_text())
    split = {t.id: t.split for t in load_tasks(tasks)}
    assert len(state["before_ids"]) == 2 and all(split[t] == "val" for t in state["before_ids"])
    assert state["inputs"]["measure_split"] == "val" and result["before_after"]["tasks"] == 2
    assert set(state["after"]["recall"]) == set(state["before_ids"])
    logs = [json.loads(x) for x in (tmp_path / "grpo" / "metrics.jsonl").read_text().splitlines()]
    assert len([r for r in logs if "reward" in r]) == 1
