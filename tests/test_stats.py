"""The statistics the arms are judged by: the cluster bootstrap resamples tasks whole (as summary.csv does),
Holm adjusts step-down, and the non-inferiority test does not call 3 tasks a proof (the percentile bootstrap alone
would)."""

from __future__ import annotations

import math

import pytest

from terminus.stats import binomial_summary, cluster_bootstrap, holm, noninferiority_test


def test_cluster_bootstrap_handles_no_task_and_one_task():
    assert all(math.isnan(x) for x in cluster_bootstrap({}))
    assert all(math.isnan(x) for x in cluster_bootstrap([[], []]))
    assert cluster_bootstrap({"t": [1.0, 0.0, 1.0]}) == pytest.approx((2 / 3,) * 3)


def test_cluster_bootstrap_pools_runs_and_resamples_tasks_whole():
    values = [0.0, 1.0, 1.0, 0.0, 1.0, 1.0, 1.0, 0.0, 1.0, 1.0]
    single = cluster_bootstrap([[v] for v in values], seed=3)
    # three identical runs per task are one observation of the task, not three: the interval does not narrow
    tripled = cluster_bootstrap([[v] * 3 for v in values], seed=3)
    assert tripled == pytest.approx(single)
    assert single[0] == pytest.approx(0.7) and single[1] < 0.7 < single[2]
    # every task weighs the same: a task with 4 runs (3 resolved) and one with 2 (none) give (0.75 + 0) / 2
    assert cluster_bootstrap([[1.0, 1.0, 1.0, 0.0], [0.0, 0.0]])[0] == pytest.approx(0.375)


def test_cluster_bootstrap_gives_the_summary_tables_intervals_draw_for_draw():
    from terminus.eval.summary import cluster_bootstrap as summary_bootstrap

    by_task = {f"t{i:02d}": [(i * 0.37) % 1, (i * 0.61) % 1][: 1 + i % 2] for i in range(30)}
    assert cluster_bootstrap(by_task, seed=4) == summary_bootstrap(by_task, seed=4)


def test_cluster_bootstrap_is_seeded_and_independent_of_key_order():
    a = {f"t{i}": [(i * 0.37) % 1, (i * 0.61) % 1] for i in range(20)}
    b = dict(reversed(list(a.items())))
    assert cluster_bootstrap(a, seed=7) == cluster_bootstrap(b, seed=7)
    assert cluster_bootstrap(a, seed=7) != cluster_bootstrap(a, seed=8)


def test_holm_step_down():
    # sorted 0.005, 0.01, 0.03, 0.04 -> x4, x3, x2, x1 = 0.02, 0.03, 0.06, 0.04 -> monotone: 0.04 becomes 0.06
    assert holm([0.01, 0.04, 0.03, 0.005]) == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert holm([0.5, None, float("nan"), 0.6]) == [pytest.approx(1.0), None, None, pytest.approx(1.0)]
    assert holm([]) == []


def test_three_tied_tasks_are_inconclusive_not_a_proof():
    result = noninferiority_test([0.0, 0.0, 0.0], 0.025)
    # every resample of three zeros is zero: the percentile interval alone would be [0, 0], "non-inferior"
    assert result.verdict == "inconclusive"
    assert result.lo < -0.5 and result.hi > 0.5 and result.p > 0.9
    assert noninferiority_test([0.0, 0.0, 1.0], 0.025).verdict == "inconclusive"  # one better task of three


def test_a_tie_on_many_tasks_is_non_inferior_and_a_large_loss_inferior():
    tie = noninferiority_test([0.0] * 480 + [1.0] * 10 + [-1.0] * 10, 0.025)
    assert tie.verdict == "non-inferior" and tie.lo > -0.025 and tie.p < 0.025
    loss = noninferiority_test([-1.0] * 100 + [0.0] * 400, 0.025)
    assert loss.verdict == "inferior" and loss.hi < -0.025 and loss.p == 1.0
    empty = noninferiority_test([], 0.025)
    assert empty.verdict == "inconclusive" and empty.p == 1.0 and empty.n == 0


def test_a_tie_needs_146_tasks_at_two_and_a_half_points():
    # 1 - 0.025^(1/k) < 0.025 from k = 146: below that a tie cannot rule out a loss of one task in 40
    assert noninferiority_test([0.0] * 145, 0.025).verdict == "inconclusive"
    assert noninferiority_test([0.0] * 146, 0.025).verdict == "non-inferior"


def test_binomial_summary_is_wilson_with_n_and_empty_at_zero():
    assert binomial_summary(0, 0) == {"mean": None, "lo": None, "hi": None, "n": 0}
    all_three = binomial_summary(3, 3)  # three of three: the interval still reaches down to 0.44, not [1, 1]
    assert all_three["mean"] == 1.0 and all_three["hi"] == 1.0 and all_three["lo"] == pytest.approx(0.4385, abs=1e-3)
    half = binomial_summary(50, 100)
    assert half["lo"] == pytest.approx(0.4038, abs=1e-3) and half["hi"] == pytest.approx(0.5962, abs=1e-3)
    assert half["n"] == 100
