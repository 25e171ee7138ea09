"""Intervals and tests the reports share: the two-sided 95% t interval of a mean (over seeds, over tasks); the
cluster bootstrap of a mean over tasks (tasks resampled with all their runs, as eval/summary.csv does), Holm's
step-down adjustment and the non-inferiority test of a paired difference that the evaluation's arms are judged by."""

from __future__ import annotations

import math
import random
import statistics
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass

# two-sided 95% quantiles of Student's t by degrees of freedom (1-30); the normal's beyond
_T975 = (
    12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160, 2.145, 2.131,
    2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042,
)  # fmt: skip


def t975(df: int) -> float:
    if df < 1:
        raise ValueError(f"a t interval needs at least 1 degree of freedom, not {df}")
    return _T975[df - 1] if df <= len(_T975) else 1.960


def mean_interval(values: list[float]) -> tuple[float, float]:
    """Mean and the half-width of its 95% t interval (0 for one value)."""
    mean = statistics.fmean(values)
    if len(values) < 2:
        return mean, 0.0
    return mean, t975(len(values) - 1) * statistics.stdev(values) / math.sqrt(len(values))


def rate_summary(values: list[float]) -> dict:
    """{mean, lo, hi, n}: a mean of per-unit values in [0, 1] (tasks, conversations) with its 95% t interval over
    the units, clipped to [0, 1]; all None at n = 0 (learning.json's rates)."""
    if not values:
        return {"mean": None, "lo": None, "hi": None, "n": 0}
    mean, half = mean_interval(values)
    return {"mean": round(mean, 4), "lo": round(max(0.0, mean - half), 4), "hi": round(min(1.0, mean + half), 4),
            "n": len(values)}  # fmt: skip


def binomial_summary(successes: int, n: int) -> dict:
    """{mean, lo, hi, n}: a proportion of `n` 0/1 outcomes (episodes, facts) with its 95% Wilson interval; all None
    at n = 0 (learning.json's binary rates: usable answers, a fact printed, a printed fact stated)."""
    if n <= 0:
        return {"mean": None, "lo": None, "hi": None, "n": 0}
    lo, hi = wilson(successes / n, n)
    return {"mean": round(successes / n, 4), "lo": round(lo, 4), "hi": round(hi, 4), "n": n}


def _task_means(clusters) -> list[float]:
    if isinstance(clusters, Mapping):  # by key, so that the order records came in changes nothing
        clusters = [clusters[k] for k in sorted(clusters, key=str)]
    return [statistics.fmean(float(v) for v in c) for c in clusters if len(c)]


def _replicates(values: list[float], n: int, seed: int) -> list[float]:
    """`n` bootstrap means of `values`, sorted (seeded). The same draws as `eval/summary.csv`'s bootstrap, so that
    a figure's interval and the table's agree to the digit."""
    rng = random.Random(seed)
    return sorted(statistics.fmean(rng.choices(values, k=len(values))) for _ in range(n))


def _percentiles(replicates: list[float], alpha: float) -> tuple[float, float]:
    n = len(replicates)
    return replicates[int(alpha / 2 * n)], replicates[min(n - 1, int((1 - alpha / 2) * n))]


def cluster_bootstrap(
    clusters: Mapping[Hashable, Sequence[float]] | Sequence[Sequence[float]],
    n: int = 2000,
    seed: int = 0,
    alpha: float = 0.05,
) -> tuple[float, float, float]:
    """Mean over tasks of a per-task quantity (each task's mean over its runs) and its percentile bootstrap
    interval (95% by default) that resamples tasks whole, with all their runs: a task's seeds are not independent
    draws, so resampling runs alone would narrow the interval by the number of seeds. `clusters` holds one list of
    run values per task (a mapping task -> values, taken in key order, or a list of lists); every task weighs the
    same however many runs it has, as in `eval/summary.csv`, whose intervals these are, draw for draw. Seeded: the
    same data give the same interval. No task: three NaNs; one task: its mean three times (there is no spread
    between tasks to resample: a caller that needs an honest interval at a handful of tasks widens it, as
    `noninferiority_test` does)."""
    means = _task_means(clusters)
    if not means:
        return (float("nan"),) * 3
    mean = statistics.fmean(means)
    if len(means) == 1:
        return mean, mean, mean
    return (mean, *_percentiles(_replicates(means, n, seed), alpha))


def holm(pvalues: Sequence[float | None]) -> list[float | None]:
    """Holm's step-down adjusted p-values, in the order given: the i-th smallest of m p-values is multiplied by
    m - i + 1, and the adjusted values are made non-decreasing in that order (capped at 1). It controls the
    family-wise error rate with no assumption about how the tests depend on each other (the arms of a benchmark
    share their reference, so they do). A None or NaN is no test: it stays None and does not count in m."""
    tested = sorted((p, i) for i, p in enumerate(pvalues) if p is not None and p == p)
    adjusted: list[float | None] = [None] * len(pvalues)
    running = 0.0
    for rank, (p, i) in enumerate(tested):
        running = max(running, min(1.0, (len(tested) - rank) * p))
        adjusted[i] = running
    return adjusted


@dataclass(frozen=True)
class NonInferiority:
    diff: float
    lo: float
    hi: float
    p: float
    """One-sided p-value for H0: diff <= -margin (see `noninferiority_test`)."""
    n: int
    verdict: str


VERDICTS = ("non-inferior", "inconclusive", "inferior")


def noninferiority_test(
    diffs: Sequence[float], margin: float, *, n: int = 2000, seed: int = 0, alpha: float = 0.05
) -> NonInferiority:
    """Is an arm no worse than its reference by more than `margin`? `diffs` holds one paired difference per task
    (arm - reference, each already averaged over the task's runs, so in [-1, 1] for resolve rates); `margin` is
    in the same units (0.025 = 2.5 points).

    The interval is the percentile bootstrap over tasks (`cluster_bootstrap`), widened where it is blind: it
    resamples only differences some task showed, so with 3 tasks that both arms resolved every resample gives 0 and
    the interval collapses to [0, 0]. It is therefore never narrower than +-(1 - (alpha/2)^(1/k)) around the mean
    of k tasks, the exact (Clopper-Pearson) bound on the share of tasks that could differ when none of k did: +-71
    points at 3 tasks, +-4 at 89, +-0.7 at 500, where the bootstrap's own width is larger as soon as tasks differ.

    The p-value is the bootstrap's: the share of replicates at or below -margin, (count + 1) / (n + 1), raised to
    the floor's own, (1 - diff - margin)^k, the level at which that widening reaches -margin; so p < alpha/2 where the
    interval's lower end clears -margin (up to the bootstrap's discreteness), as a one-sided test at alpha/2 should.
    Verdict: `non-inferior` when lo > -margin, `inferior` when hi < -margin, else `inconclusive`. No task: NaN
    bounds, p = 1, inconclusive."""
    k = len(diffs)
    if k == 0:
        return NonInferiority(float("nan"), float("nan"), float("nan"), 1.0, 0, "inconclusive")
    mean = statistics.fmean(diffs)
    means = _replicates([float(d) for d in diffs], n, seed) if k > 1 else [mean] * n
    lo, hi = _percentiles(means, alpha)
    floor = 1 - (alpha / 2) ** (1 / k)
    lo, hi = max(-1.0, min(lo, mean - floor)), min(1.0, max(hi, mean + floor))
    p_boot = (sum(m <= -margin + 1e-12 for m in means) + 1) / (n + 1)
    p_floor = min(1.0, max(0.0, 1 - mean - margin)) ** k
    verdict = "non-inferior" if lo > -margin else "inferior" if hi < -margin else "inconclusive"
    return NonInferiority(mean, lo, hi, max(p_boot, p_floor), k, verdict)


def wilson(rate: float, n: int) -> tuple[float, float]:
    """The 95% Wilson interval of a proportion of `n` (also a conservative one for a mean of values in [0, 1]); at
    n = 3 tasks all resolved it is [0.44, 1], where a bootstrap says [1, 1]."""
    if n <= 0:
        return 0.0, 1.0
    z = 1.959964
    centre = (rate + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(rate * (1 - rate) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)
