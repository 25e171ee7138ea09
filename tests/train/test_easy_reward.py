"""The easy-reward GRPO check: one step of GRPO's own main, rollout, masks and optimizer with a reward that always
differs within a group and depends only on what the policy writes (its length, rewarded shorter and, separately,
longer), measured on the step's own samples before and after the step. With the wiring right the reward the policy
would now get on them rises in both directions; with the learning rate at 0 (no update reaching the weights) it
does not. This tells a broken wiring from a hard task."""

from __future__ import annotations

import pytest

from terminus.config import ROOT
from terminus.train.easy_reward import easy_reward_check, generated_chars, longer, measure_step, shorter

MARGIN = 0.5  # the step's log-probability changes must correlate with the rewards by r >= 0.5


def test_the_rewards_count_what_the_policy_wrote_and_not_what_the_terminal_printed():
    record = {"messages": [{"role": "system", "content": "x" * 50}, {"role": "user", "content": "q"},
                           {"role": "assistant", "content": "abc"}, {"role": "tool", "content": "y" * 900},
                           {"role": "assistant", "content": "defg"}]}  # fmt: skip
    assert generated_chars([record]) == [7]
    assert shorter(None, trajectory=[record]) == [-0.007] and longer(None, trajectory=[record]) == [0.007]


def test_the_step_is_measured_by_importance_weights_on_its_own_samples():
    rewards = [1.0, 2.0, 3.0, 4.0]
    toward_best = measure_step(rewards, [0.0] * 4, [-3.0, -1.0, 1.0, 3.0])
    assert toward_best["first"] == 0.5 and toward_best["last"] > 0.9 and toward_best["correlation"] == 1.0
    frozen = measure_step(rewards, [0.0] * 4, [0.0] * 4)
    assert frozen["rise"] == 0 and frozen["correlation"] == 0  # no update, no rise
    turned = measure_step(rewards, [0.0] * 4, [3.0, 1.0, -1.0, -3.0])
    assert turned["rise"] < -0.4 and turned["correlation"] == -1.0  # the sign turned
    # advantages put on the wrong samples: the policy moved, but not in the rewards' order
    wrong = measure_step(rewards, [0.0] * 4, [2.0, -2.0, -2.0, 2.0])
    assert abs(wrong["rise"]) < 0.01 and abs(wrong["correlation"]) < 0.01
    with pytest.raises(ValueError, match="no advantage"):
        measure_step([1.0] * 4, [0.0] * 4, [1.0] * 4)


def _argv(model, tasks, *extra: str) -> list[str]:
    return ["--config", str(ROOT / "configs" / "grpo" / "tiny-learning.yaml"), "--model_name_or_path", str(model),
            "--tasks_file", str(tasks), "--experiment_config", str(ROOT / "configs" / "config.yaml"),
            "--max_tasks", "4", "--spread_candidates", "0", "--before_after_samples", "0", "--report_to", "none",
            "--save_strategy", "no", *extra]  # fmt: skip


@pytest.mark.slow
def test_one_grpo_step_raises_an_easy_reward_both_ways_and_not_with_a_zero_learning_rate(
    briefly_sft_model, sft_data, tmp_path
):
    tasks, _ = sft_data
    learned = easy_reward_check(_argv(briefly_sft_model, tasks), tmp_path / "a", MARGIN)
    assert learned["passed"], learned  # both directions: the estimate rises and r >= the margin
    assert all(0 < r["first"] < 1 for r in learned["directions"].values())  # the samples differed: room to rise
    frozen = easy_reward_check(_argv(briefly_sft_model, tasks, "--learning_rate", "0"), tmp_path / "b", MARGIN)
    assert not frozen["passed"] and frozen["last"] == frozen["first"], frozen  # the check can fail
