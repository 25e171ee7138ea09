"""Is an arm no worse than what a practitioner would do without training a model? `eval/noninferiority.csv`
(issue 42): one row per benchmark and arm against each reference arm of its main agent, `none × full` and the best
of `none × {truncate, mask}`, with the paired difference in resolve rate, its cluster-bootstrap interval, Holm's
adjusted p-value and a verdict; and the tokens and dollars of two arms over the tasks both resolved.

An arm is `<main_agent>__<subagent>__<context>` on a benchmark; its runs are its seeds (a deterministic arm has one).
The margin is in rate units: 0.025 is 2.5 points of resolve rate. The statistics (bootstrap, Holm, the test and
its small-sample floor) are `terminus.stats`', shared with the notebooks' figures."""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Iterable, Mapping

from terminus.errors import TerminusError
from terminus.stats import holm, noninferiority_test

COLUMNS = (
    "benchmark",
    "arm",
    "reference",
    "resolve_diff",
    "lo",
    "hi",
    "margin",
    "p_holm",
    "verdict",
    "n_tasks",
    "n_runs",
)
KINDS = ("full", "truncate", "mask", "summarize", "prune", "extract")
BEST_OF = ("truncate", "mask")  # the cheap context baselines the second reference is the best of
NO_SUBAGENT = "none"


class ArmsError(TerminusError):
    """Records or arguments the arm comparison cannot read (one line naming the field, context or value)."""


def arm_name(record: Mapping) -> str:
    return f"{record['main_agent']}__{record['subagent']}__{record['context']}"


def _check(records: list[Mapping], context_kinds: Mapping[str, str] | None = None) -> None:
    for r in records:
        missing = [f for f in ("benchmark", "main_agent", "subagent", "context", "task_id") if f not in r]
        if missing:
            raise ArmsError(
                f"eval record {r.get('key', r.get('task_id', '?'))} has no {', '.join(missing)}: "
                "records written before the context axis (issue 42) cannot be compared by arm; rerun eval"
            )
        if context_kinds is not None and r["context"] not in context_kinds:
            raise ArmsError(
                f"context {r['context']!r} of the records is not among eval.contexts {sorted(context_kinds)}"
            )
    if context_kinds is not None:
        unknown = {k for k in context_kinds.values() if k not in KINDS}
        if unknown:
            raise ArmsError(f"unknown context kind(s) {sorted(unknown)}: kinds are {', '.join(KINDS)}")


def _per_task(records: Iterable[Mapping], field: str) -> dict[tuple[str, str], dict[str, list[float]]]:
    """(benchmark, arm) -> task -> the runs' values of `field` (runs without a value left out)."""
    out: dict[tuple[str, str], dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for r in records:
        if r.get(field) is not None:
            out[(r["benchmark"], arm_name(r))][r["task_id"]].append(float(r[field]))
    return out


def _mean(values: list[float]) -> float | None:
    return statistics.fmean(values) if values else None


def _task_mean(tasks: Mapping[str, list[float]]) -> float | None:
    """Mean over tasks of each task's mean over its runs: every task weighs the same, however many seeds ran it."""
    return _mean([statistics.fmean(v) for v in tasks.values() if v])


def reference_arms(records: list[Mapping], context_kinds: Mapping[str, str]) -> dict[tuple[str, str], list[str]]:
    """(benchmark, main agent) -> its reference arms: `none × full` (the subagent `none` with the context of kind
    `full`) and the best `none × {truncate, mask}`: highest resolve rate (mean over tasks of each task's mean over
    runs), ties by the lower mean cost_usd, then total_tokens (a missing one counts as the highest), then the name,
    so that the choice never depends on record order. The best is chosen on the same tasks it is then compared on:
    that favours the reference, so it makes the other arms' verdicts conservative, never lenient."""
    _check(records, context_kinds)
    means = {field: _per_task(records, field) for field in ("resolved", "cost_usd", "total_tokens")}

    def rank(benchmark: str, arm: str) -> tuple:
        rate, cost, tokens = (_task_mean(means[f].get((benchmark, arm), {})) for f in means)
        inf = float("inf")
        return (
            -(-1.0 if rate is None else rate),
            inf if cost is None else cost,
            inf if tokens is None else tokens,
            arm,
        )

    found: dict[tuple[str, str], set[tuple[str, str]]] = defaultdict(set)
    for r in records:
        if r["subagent"] == NO_SUBAGENT:
            found[(r["benchmark"], r["main_agent"])].add((arm_name(r), context_kinds[r["context"]]))
    out = {}
    for (benchmark, main), arms in sorted(found.items()):
        refs = []
        for kinds in (("full",), BEST_OF):
            candidates = [a for a, kind in arms if kind in kinds]
            if candidates:
                refs.append(min(candidates, key=lambda a, b=benchmark: rank(b, a)))
        out[(benchmark, main)] = refs
    return out


def noninferiority_rows(
    records: list[Mapping],
    margin: float,
    *,
    context_kinds: Mapping[str, str],
    seed: int = 0,
    n_boot: int = 2000,
) -> list[dict]:
    """`eval/noninferiority.csv`'s rows (columns `COLUMNS`): for every benchmark with outcomes, every arm of a main
    agent against each of that main agent's references (`reference_arms`; no row of a reference against itself).

    resolve_diff is the paired per-task difference, arm - reference, each side averaged over its runs of the task,
    over the tasks both arms ran; lo/hi its 95% cluster-bootstrap interval (tasks resampled; widened at a handful of
    tasks, see `terminus.stats.noninferiority_test`); p_holm the one-sided bootstrap p-value for H0: diff <= -margin,
    Holm-adjusted across the arms of a benchmark compared with the same reference. The verdict reads the interval:
    `non-inferior` when lo > -margin, `inferior` when hi < -margin, else `inconclusive` (a 95% two-sided interval
    is a one-sided test at 2.5% per arm; p_holm is the statement that holds for all arms at once). n_tasks is the
    tasks paired, n_runs the arm's runs (seeds). A run counts as its record's `resolved` says, errors included (a run
    with None is left out). Benchmarks without outcomes (resolved None everywhere: execution) get no rows; an arm
    with no task paired gets its row, inconclusive, with n_tasks 0. `margin` is in rate units: 0.025 = 2.5 points.
    At that margin a perfect tie needs 146 tasks to be called non-inferior (the test's small-sample floor): with
    fewer, a task is worth more than the margin can absorb, and `inconclusive` is the honest answer."""
    if not 0 < margin < 1:
        raise ArmsError(f"non-inferiority margin {margin} is not in (0, 1): it is in rate units (0.025 = 2.5 points)")
    records = list(records)
    references = reference_arms(records, context_kinds)
    resolved = _per_task(records, "resolved")
    with_outcomes = {b for b, _ in resolved}
    seeds: dict[tuple[str, str], set] = defaultdict(set)
    arms_of: dict[tuple[str, str], set[str]] = defaultdict(set)
    for r in records:
        seeds[(r["benchmark"], arm_name(r))].add(r.get("seed"))
        arms_of[(r["benchmark"], r["main_agent"])].add(arm_name(r))
    rows = []
    for (benchmark, main), refs in references.items():
        if benchmark not in with_outcomes:
            continue
        for reference in refs:
            ref_tasks = resolved.get((benchmark, reference), {})
            family = []
            for arm in sorted(arms_of[(benchmark, main)] - {reference}):
                tasks = resolved.get((benchmark, arm), {})
                shared = sorted(set(tasks) & set(ref_tasks))
                diffs = [statistics.fmean(tasks[t]) - statistics.fmean(ref_tasks[t]) for t in shared]
                test = noninferiority_test(diffs, margin, n=n_boot, seed=seed)
                family.append((arm, test))
            for (arm, test), p in zip(family, holm([t.p for _, t in family]), strict=True):
                rows.append(
                    {
                        "benchmark": benchmark,
                        "arm": arm,
                        "reference": reference,
                        "resolve_diff": _round(test.diff),
                        "lo": _round(test.lo),
                        "hi": _round(test.hi),
                        "margin": margin,
                        "p_holm": _round(p),
                        "verdict": test.verdict,
                        "n_tasks": test.n,
                        "n_runs": len(seeds[(benchmark, arm)]),
                    }
                )
    return rows


def both_resolved_costs(
    records: list[Mapping], arm: str, reference: str, *, benchmark: str | None = None
) -> dict[str, float | int | None]:
    """Tokens and dollars of `arm` and `reference` over the tasks both resolved (issue 42: a cheaper arm that
    fails the hard tasks looks cheap for it). A task counts as resolved by an arm when every run of it resolved:
    with the mean over runs instead, a task resolved by one seed of three would bring the cost of two failed runs
    in. Each side's figure is the mean over those tasks of the task's mean over runs (tasks weigh the same whatever
    the seeds). Tasks are (benchmark, task_id), all benchmarks unless `benchmark` is given. A value is None where no
    such task, or no run of them, has it."""
    records = [r for r in records if benchmark is None or r["benchmark"] == benchmark]
    _check(records)
    runs: dict[str, dict[tuple[str, str], list[Mapping]]] = {arm: defaultdict(list), reference: defaultdict(list)}
    for r in records:
        if arm_name(r) in runs:
            runs[arm_name(r)][(r["benchmark"], r["task_id"])].append(r)

    def all_resolved(rs: list[Mapping]) -> bool:
        return bool(rs) and all(r.get("resolved") == 1.0 for r in rs)

    both = sorted(t for t in runs[arm] if all_resolved(runs[arm][t]) and all_resolved(runs[reference].get(t, [])))
    out: dict[str, float | int | None] = {"n_tasks": len(both)}
    for side, name in (("arm", arm), ("reference", reference)):
        for field in ("total_tokens", "cost_usd"):
            per_task = {t: [float(r[field]) for r in runs[name][t] if r.get(field) is not None] for t in both}
            value = _task_mean(per_task)
            out[f"{side}_{field}"] = None if value is None else _round(value)
    return out


def _round(x: float | None) -> float | None:
    return None if x is None or x != x else round(x, 4)
