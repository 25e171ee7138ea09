"""The easy-reward GRPO check: with a reward the policy's own samples hit sometimes and that depends only on what
it generates, GRPO's own main, rollout and masks must raise it by the stated margin; with the learning rate at 0
(the same run, no update reaching the weights) it must not. This tells a broken wiring from a hard task."""

from __future__ import annotations

import pytest

from terminus.config import ROOT
from terminus.train.easy_reward import easy_reward_check, fewer_commands, summarise

MARGIN = 0.25


def test_the_reward_pays_for_answering_after_fewer_commands_but_not_after_none():
    records = [
        {"termination": "final_answer", "turns": [{}]},
        {"termination": "final_answer", "turns": []},  # answering without running anything does not pay
        {"termination": "final_answer", "turns": [{}, {}]},
        {"termination": "final_answer", "turns": [{}, {}, {}]},
        {"termination": "turn_limit", "turns": [{}]},
    ]
    assert fewer_commands([None] * 5, trajectory=records) == [1.0, 0.0, 0.5, 0.0, 0.0]


def test_the_summary_passes_when_the_best_quarter_rises_by_the_margin_and_reports_a_collapse():
    pairs = [(0.25, 2.0), (0.25, 2.0), (0.5, 1.5), (0.5, 1.5), (0.75, 1.2), (1.0, 1.0), (1.0, 1.0), (0.5, 0.5)]
    steps = [{"reward": r, "episode/turns": t, "episode/final_answer": 1.0} for r, t in pairs]
    out = summarise(steps, MARGIN)
    assert (out["first"], out["best"], out["best_from_step"], out["passed"]) == (0.25, 1.0, 6, True)
    assert (out["last"], out["turns_first"], out["turns_last"]) == (0.75, 2.0, 0.75)  # what it gave up shows
    assert not summarise(steps, 0.8)["passed"]  # a rise of 0.75 is below a margin of 0.8
    flat = [{**s, "reward": 0.5} for s in steps]
    assert not summarise(flat, MARGIN)["passed"]
    with pytest.raises(ValueError, match="at least 2"):
        summarise(steps[:1], MARGIN)


def _argv(model, tasks, out, *extra: str) -> list[str]:
    return ["--config", str(ROOT / "configs" / "grpo" / "tiny-learning.yaml"), "--model_name_or_path", str(model),
            "--tasks_file", str(tasks), "--output_dir", str(out), "--experiment_config",
            str(ROOT / "configs" / "config.yaml"), "--max_tasks", "4", "--spread_candidates", "0",
            "--before_after_samples", "0", "--report_to", "none", "--save_strategy", "no", *extra]  # fmt: skip


@pytest.mark.slow
def test_grpo_raises_an_easy_reward_and_not_with_a_zero_learning_rate(briefly_sft_model, sft_data, tmp_path):
    tasks, _ = sft_data
    steps = ["--max_steps", "12", "--learning_rate", "1e-3"]
    learned = easy_reward_check(_argv(briefly_sft_model, tasks, tmp_path / "a", *steps), MARGIN)
    assert learned["passed"], learned  # the reward rises by the margin
    assert learned["first"] < 1.0  # it had room to rise: the samples did not all hit it already
    frozen = easy_reward_check(_argv(briefly_sft_model, tasks, tmp_path / "b", *steps[:2], "--learning_rate", "0"),
                               MARGIN)  # fmt: skip
    assert not frozen["passed"], frozen  # the same run with no update does not rise: the check can fail
