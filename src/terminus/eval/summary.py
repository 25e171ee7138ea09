"""`eval/summary.csv`: per arm (main agent x subagent x context on a benchmark), every metric with a 95% interval,
its seeds pooled, and the paired difference against the arm with no subagent under the full context.

- Runs are pooled with a cluster bootstrap over tasks: a task's value is the mean over its runs (seeds), and tasks
  are resampled with all their runs (`cluster_bootstrap`), so that n is the number of tasks, not of episodes.
- Honest at small n (issue 45): the rates (`RATES`: of 0/1 outcomes, and the per-episode shares of subagent calls
  with a usable answer, a fallback or a rerun) get a 95% Wilson interval at n tasks; the other
  metrics below `MIN_BOOTSTRAP` tasks get no interval but the range of their tasks' values in `_lo`/`_hi` (a
  bootstrap of 3 tasks claims a precision it does not have); `interval` says which.
- METRICS is in ranking order: arms are ranked by the main agent's outcome (resolve rate), then by what it cost
  (tokens, dollars, turns); the judge score and the fact checker's figures come after, to explain a ranking, never to
  decide one (the judge is a model, and the training reward is one too).
- Rates are means of 0/1 fields: `error_rate` of `error` set, `turn_limit_rate` of `turn_limit`, `verdict_accuracy`
  of `verdict_correct`. `cost_per_resolved_usd` is the arm's dollars over its resolved tasks (a ratio of sums).
- Main-agent tokens fall when an episode ends early on an error, so `error_rate` stands beside them, and tokens and
  dollars are also given over the tasks that both the arm and its reference resolved in every run
  (`*_both_resolved`: `noninferiority.both_resolved_costs`).
- `wall_s`, `gpu_s`, `gpu_cost_usd` and `cost_usd` (which holds the GPU dollars) are wall-clock figures: they vary
  between runs as time does; `token_cost_usd` does not.
"""

from __future__ import annotations

import csv
import io
import random
import statistics
from collections import defaultdict
from pathlib import Path

from terminus.eval.noninferiority import arm_name, both_resolved_costs
from terminus.io import write_text_atomic
from terminus.stats import cluster_bootstrap, wilson

METRICS = (
    "resolve_rate",
    "main_agent_tokens",
    "total_tokens",
    "cost_usd",
    "token_cost_usd",
    "main_tokens_uncached",
    "main_tokens_cache_read",
    "main_tokens_output",
    "peak_context_tokens",
    "main_agent_turns",
    "direct_terminal_calls",
    "subagent_calls",
    "usable_answer_rate",
    "fallback_rate",
    "verdict_accuracy",
    "error_rate",
    "turn_limit_rate",
    "rerun_rate",  # no value without a subagent, so its paired difference against No-Subagent stays empty
    "judge_score",
    "fact_precision",
    "fact_recall",
    "hallucinated",
    "reward",
    "subagent_turns",
    "subagent_tokens",
    "context_tokens",
    "timeouts",
    "history_commands",  # commands that read history beyond the base commit, main agent and subagent together
    "gpu_s",
    "gpu_cost_usd",
    "wall_s",
)
FIELD = {"resolve_rate": "resolved", "verdict_accuracy": "verdict_correct", "turn_limit_rate": "turn_limit"}
ARM = ("main_agent", "subagent", "context", "benchmark")
# rates of 0/1 outcomes, or of per-episode shares of subagent calls (usable answers, fallbacks, reruns): a Wilson
# interval with n beside it at any number of tasks (conservative for a mean of shares), never a bootstrap
RATES = ("resolve_rate", "error_rate", "turn_limit_rate", "verdict_accuracy", "usable_answer_rate", "fallback_rate",
         "rerun_rate")  # fmt: skip
MIN_BOOTSTRAP = 10  # tasks
BASELINE = ("none", "full")  # the reference arm's subagent and context


def _value(record: dict, metric: str) -> float | None:
    if metric == "error_rate":
        return float(record.get("error") is not None)
    value = record.get(FIELD.get(metric, metric))
    return None if value is None else float(value)


def per_task(records: list[dict], metric: str) -> dict[str, list[float]]:
    """Each task's values of the metric over its runs (episodes without a value left out)."""
    out: dict[str, list[float]] = defaultdict(list)
    for r in records:
        v = _value(r, metric)
        if v is not None:
            out[r["task_id"]].append(v)
    return dict(out)


def bootstrap(values: list[float], n: int = 2000, seed: int = 0, alpha: float = 0.05) -> tuple[float, float, float]:
    """Mean and the percentile bootstrap interval of independent values (seeded): each value a cluster of its own."""
    return cluster_bootstrap([[v] for v in values], n=n, seed=seed, alpha=alpha)


def interval(by_task: dict[str, list[float]], metric: str, n_boot: int) -> tuple[float, float, float]:
    """A metric's mean over tasks and its interval: Wilson for a rate of 0/1 outcomes, the cluster bootstrap from
    `MIN_BOOTSTRAP` tasks on, else the range of the tasks' values."""
    means = [statistics.fmean(v) for v in by_task.values() if v]
    if not means:
        return (float("nan"),) * 3
    mean = statistics.fmean(means)
    if metric in RATES:
        return (mean, *wilson(mean, len(means)))
    if len(means) < MIN_BOOTSTRAP:
        return mean, min(means), max(means)
    return cluster_bootstrap(by_task, n=n_boot)


def quantile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    pos = q * (len(ordered) - 1)
    lo = int(pos)
    hi = min(lo + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)


def cost_per_resolved(records: list[dict], n: int = 2000, seed: int = 0) -> tuple[float, float, float]:
    """Dollars per resolved task (sum of cost over sum of resolved), with a cluster-bootstrap interval."""
    tasks: dict[str, list[tuple[float, float]]] = defaultdict(list)
    for r in records:
        if r.get("cost_usd") is not None and r.get("resolved") is not None:
            tasks[r["task_id"]].append((float(r["cost_usd"]), float(r["resolved"])))
    if not tasks:
        return (float("nan"),) * 3
    pairs = [(statistics.fmean(c for c, _ in v), statistics.fmean(s for _, s in v)) for _, v in sorted(tasks.items())]

    def ratio(sample):
        solved = sum(s for _, s in sample)
        return sum(c for c, _ in sample) / solved if solved else float("nan")

    value = ratio(pairs)
    rng = random.Random(seed)
    draws = sorted(x for x in (ratio(rng.choices(pairs, k=len(pairs))) for _ in range(n)) if x == x)
    if len(pairs) == 1 or not draws:
        return value, value, value
    return value, draws[int(0.025 * len(draws))], draws[min(len(draws) - 1, int(0.975 * len(draws)))]


def summarise(records: list[dict], stamp: dict, *, n_boot: int = 2000) -> list[dict]:
    groups: dict[tuple, list[dict]] = defaultdict(list)
    records = [{"context": "full"} | r for r in records]
    for r in records:
        groups[tuple(r[c] for c in ARM)].append(r)
    rows = []
    for arm in sorted(groups, key=lambda c: tuple(str(x) for x in c)):
        members = groups[arm]
        tasks = {r["task_id"] for r in members}
        row = dict(zip(ARM, arm, strict=True)) | {
            "n": len(tasks),
            "runs": len({r["seed"] for r in members}),
            "episodes": len(members),
        }
        key = (arm[0], *BASELINE, arm[3])
        baseline = groups.get(key) if arm != key else None
        row["interval"] = "bootstrap" if len(tasks) >= MIN_BOOTSTRAP else "range (n < 10)"
        for metric in METRICS:
            mean, lo, hi = interval(per_task(members, metric), metric, n_boot)
            k = _digits(metric)
            row[metric], row[f"{metric}_lo"], row[f"{metric}_hi"] = _round(mean, k), _round(lo, k), _round(hi, k)
            if baseline:
                ref = per_task(baseline, metric)
                mine = per_task(members, metric)
                diffs = {t: [statistics.fmean(v) - statistics.fmean(ref[t])] for t, v in mine.items() if t in ref}
                d, dlo, dhi = interval(diffs, f"{metric}_diff", n_boot)
                row[f"{metric}_diff"], row[f"{metric}_diff_lo"], row[f"{metric}_diff_hi"] = (
                    _round(d, k),
                    _round(dlo, k),
                    _round(dhi, k),
                )
        walls = [float(r["wall_s"]) for r in members if r.get("wall_s") is not None]
        row["wall_s_p50"], row["wall_s_p90"] = _round(quantile(walls, 0.5)), _round(quantile(walls, 0.9))
        value, lo, hi = cost_per_resolved(members, n_boot)
        row["cost_per_resolved_usd"], row["cost_per_resolved_usd_lo"], row["cost_per_resolved_usd_hi"] = (
            _round(value, 6),
            _round(lo, 6),
            _round(hi, 6),
        )
        if baseline:
            both = both_resolved_costs(records, arm_name(members[0]), arm_name(baseline[0]), benchmark=arm[3])
            row["n_both_resolved"] = both.pop("n_tasks")
            row |= {f"{k}_both_resolved": "" if v is None else v for k, v in both.items()}
        rows.append(row | stamp)
    return rows


def _round(x: float, digits: int = 4) -> float | str:
    return "" if x != x else round(x, digits)  # NaN (no data for this metric here) -> empty


def _digits(metric: str) -> int:
    return 6 if "usd" in metric else 4  # dollars of a short episode are fractions of a cent


def write_csv(rows: list[dict], path: Path, columns: list[str] | None = None) -> None:
    """Rows as a CSV, atomically; the columns in first-seen order, or as given (a header even without rows)."""
    columns = list(columns or [])
    for row in rows:
        columns += [c for c in row if c not in columns]
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=columns, restval="")
    writer.writeheader()
    writer.writerows(rows)
    write_text_atomic(path, buffer.getvalue())
