"""Intervals the reports share: the two-sided 95% t interval of a mean (over seeds, over tasks)."""

from __future__ import annotations

import math
import statistics

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
