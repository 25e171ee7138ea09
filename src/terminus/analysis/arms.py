"""The evaluation's arms (issue 42: main agent × subagent × context on a benchmark, its runs its seeds) as the
evaluation notebook's figures read them, from the records table (`load(results, "eval_records")`): each arm's resolve
rate and cost with cluster-bootstrap intervals and the Pareto front (`arm_table`, `pareto_front`), per-task cost
ratios against the main agent's `none × full` (`cost_ratios`, `ratio_summary`), the tasks' difficulty tiers and the
routing map (`difficulty_tiers`, `routing_table`). The figures themselves are in `analysis.arms_plots`.

`full` names the context of kind `full` (the issue's config names it so). Non-inferiority is
`terminus.stats.noninferiority_test`, the test `eval/noninferiority.csv` uses."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from terminus.analysis.palette import arm_palette
from terminus.stats import cluster_bootstrap, noninferiority_test

ARM = ("main_agent", "subagent", "context")
NEEDED = ("benchmark", *ARM, "task_id", "resolved")
TIERS = ("light", "medium", "heavy")  # terciles of the main agent's tokens under `none × full`
DEFAULT_MARGIN = 0.025  # the paper config's analysis.noninferiority_margin, 2.5 points


def missing(records: pd.DataFrame, columns: tuple[str, ...]) -> list[str]:
    """The columns a figure needs that the records lack (results from before the context axis lack `context`,
    `cost_usd`, `total_tokens` and `task_type`)."""
    return [c for c in columns if c not in records.columns]


def with_arms(records: pd.DataFrame) -> pd.DataFrame:
    """The records with `arm` and numeric outcomes and costs (None -> NaN)."""
    out = records.copy()
    out["arm"] = out["main_agent"].astype(str) + "__" + out["subagent"].astype(str) + "__" + out["context"].astype(str)
    for column in ("resolved", "cost_usd", "total_tokens", "main_agent_tokens"):
        if column in out:
            out[column] = pd.to_numeric(out[column], errors="coerce")
    return out


def reference_arm(main_agent: str, full: str = "full") -> str:
    return f"{main_agent}__none__{full}"


def palette_of(records: pd.DataFrame) -> dict[str, str]:
    """`palette.arm_palette` (each arm in its subagent's colour, as in every other figure) over every arm of the
    records; empty for records without arms (before the context axis)."""
    return {} if missing(records, ARM) else arm_palette(with_arms(records)["arm"])


def _clusters(rows: pd.DataFrame, column: str) -> dict[str, list[float]]:
    values = rows.dropna(subset=[column])
    return {task: list(group[column]) for task, group in values.groupby("task_id")}


def arm_table(records: pd.DataFrame, *, cost: str = "cost_usd", seed: int = 0) -> pd.DataFrame:
    """One row per benchmark and arm with an outcome: resolve rate and mean cost per run, each pooled over runs with
    its 95% cluster-bootstrap interval (tasks resampled with all their runs), mean total tokens, tasks and runs."""
    records = with_arms(records)
    rows = []
    for (benchmark, arm), group in records.groupby(["benchmark", "arm"], sort=True):
        outcomes = _clusters(group, "resolved")
        if not outcomes:
            continue
        rate, lo, hi = cluster_bootstrap(outcomes, seed=seed)
        spend = _clusters(group, cost) if cost in group else {}
        c, c_lo, c_hi = cluster_bootstrap(spend, seed=seed)
        tokens = group["total_tokens"].mean() if "total_tokens" in group else float("nan")
        first = group.iloc[0]
        rows.append(
            {"benchmark": benchmark, "arm": arm, **{k: first[k] for k in ARM}}
            | {"resolve_rate": rate, "resolve_rate_lo": lo, "resolve_rate_hi": hi}
            | {cost: c, f"{cost}_lo": c_lo, f"{cost}_hi": c_hi, "total_tokens": tokens}
            | {"n_tasks": len(outcomes), "n_runs": group["seed"].nunique() if "seed" in group else 1}
        )
    return pd.DataFrame(rows)


def pareto_front(table: pd.DataFrame, x: str = "cost_usd", y: str = "resolve_rate") -> list[str]:
    """The arms no other arm dominates (as cheap or cheaper and as good or better, strictly one of them), cheapest
    first; arms without both values are left out. Give it one benchmark's rows."""
    points = table.dropna(subset=[x, y])
    front = []
    for _, a in points.iterrows():
        dominated = ((points[x] <= a[x]) & (points[y] >= a[y]) & ((points[x] < a[x]) | (points[y] > a[y]))).any()
        if not dominated:
            front.append((a[x], -a[y], a["arm"]))
    return [arm for *_, arm in sorted(front)]


def _task_means(records: pd.DataFrame, column: str) -> pd.DataFrame:
    """benchmark, main_agent, arm, task_id -> the task's mean of `column` over its runs."""
    keys = ["benchmark", "main_agent", "arm", "task_id"]
    return records.dropna(subset=[column]).groupby(keys, as_index=False)[column].mean()


def cost_ratios(records: pd.DataFrame, *, full: str = "full", cost: str = "cost_usd") -> pd.DataFrame:
    """Per task, each arm's cost over its main agent's `none × full` cost on the same task (each averaged over
    runs): benchmark, main_agent, arm, task_id, ratio. Tasks whose reference cost is missing or zero are left out
    (no ratio), as is the reference itself."""
    means = _task_means(with_arms(records), cost)
    ref = means[means["arm"] == means["main_agent"].map(lambda m: reference_arm(m, full))]
    ref = ref[ref[cost] > 0].rename(columns={cost: "reference"}).drop(columns="arm")
    out = means.merge(ref, on=["benchmark", "main_agent", "task_id"])
    out = out[out["arm"] != out["main_agent"].map(lambda m: reference_arm(m, full))]
    out["ratio"] = out[cost] / out["reference"]
    return out[["benchmark", "main_agent", "arm", "task_id", "ratio"]].reset_index(drop=True)


def ratio_summary(ratios: pd.DataFrame) -> pd.DataFrame:
    """Per benchmark and arm: tasks, and the median, 90th percentile and mean of the per-task cost ratio (a mean
    alone hides the tasks where an arm costs several times the reference)."""
    grouped = ratios.groupby(["benchmark", "arm"])["ratio"]
    return pd.DataFrame(
        {
            "n_tasks": grouped.size(),
            "median": grouped.median(),
            "p90": grouped.quantile(0.9),
            "mean": grouped.mean(),
        }
    ).reset_index()


def difficulty_tiers(records: pd.DataFrame, *, full: str = "full") -> pd.DataFrame:
    """Each task's difficulty tier: the tercile of its main agent's tokens under that main agent's `none × full`
    (mean over runs), per benchmark and main agent. A task the reference spends more on is harder for this main
    agent whatever the task's label says. Tercile by rank: tier = floor(3 (rank - 1) / n), tied tasks sharing the
    lowest rank, so that equal spend never splits across tiers (and a tier may then be empty); TIERS names them.
    Columns: benchmark, main_agent, task_id, main_agent_tokens, tier."""
    means = _task_means(with_arms(records), "main_agent_tokens")
    ref = means[means["arm"] == means["main_agent"].map(lambda m: reference_arm(m, full))].drop(columns="arm")
    parts = []
    for _, group in ref.groupby(["benchmark", "main_agent"]):
        rank = group["main_agent_tokens"].rank(method="min")
        index = ((rank - 1) * 3 // len(group)).astype(int)
        parts.append(group.assign(tier=[TIERS[i] for i in index]))
    columns = ["benchmark", "main_agent", "task_id", "main_agent_tokens", "tier"]
    return pd.concat(parts, ignore_index=True)[columns] if parts else pd.DataFrame(columns=columns)


def routing_table(
    records: pd.DataFrame, margin: float, *, full: str = "full", cost: str = "cost_usd", seed: int = 0
) -> pd.DataFrame:
    """The routing map: per benchmark, main agent, task type and difficulty tier (`difficulty_tiers`), the cheapest
    arm that is non-inferior to the main agent's `none × full` on that cell's tasks (the reference itself always
    qualifies: it is what runs when nothing else is shown to be as good). Non-inferiority is the per-arm test of
    `eval/noninferiority.csv` (`noninferiority_test`, margin in rate units) on the cell's tasks, without Holm: the map
    is a description, the table is the claim. A cell has few tasks: at a 2.5-point margin a tie needs 146 tasks to
    clear the test's small-sample floor, so small cells keep the reference, which is the honest answer.
    Cheapest: the lowest mean `cost` over the cell's tasks (each a mean over runs), then total tokens, then name.
    Columns: benchmark, main_agent, task_type, tier, arm, cost, reference_cost, cost_ratio, n_tasks, n_non_inferior."""
    records = with_arms(records)
    tiers = difficulty_tiers(records, full=full)
    task_types = records.drop_duplicates(["benchmark", "task_id"])[["benchmark", "task_id", "task_type"]]
    tiers = tiers.merge(task_types, on=["benchmark", "task_id"])
    resolved = _task_means(records, "resolved").set_index(["benchmark", "main_agent", "arm", "task_id"])["resolved"]
    spend = {c: _task_means(records, c) for c in (cost, "total_tokens") if c in records}
    rows = []
    for (benchmark, main, task_type, tier), cell in tiers.groupby(["benchmark", "main_agent", "task_type", "tier"]):
        tasks = set(cell["task_id"])
        reference = reference_arm(main, full)
        arms = sorted(set(records.loc[(records["benchmark"] == benchmark) & (records["main_agent"] == main), "arm"]))

        def outcomes(arm: str, b=benchmark, m=main, tasks=tasks) -> dict[str, float]:
            try:
                series = resolved.loc[(b, m, arm)]
            except KeyError:
                return {}
            return {t: v for t, v in series.items() if t in tasks}

        def mean_spend(arm: str, column: str, b=benchmark, tasks=tasks) -> float:
            if column not in spend:
                return float("nan")
            rows_ = spend[column]
            picked = rows_[(rows_["benchmark"] == b) & (rows_["arm"] == arm) & rows_["task_id"].isin(tasks)]
            return float(picked[column].mean()) if len(picked) else float("nan")

        ref = outcomes(reference)
        eligible = [reference]
        for arm in arms:
            own = outcomes(arm)
            shared = sorted(set(own) & set(ref))
            if arm != reference and shared:
                test = noninferiority_test([own[t] - ref[t] for t in shared], margin, seed=seed)
                if test.verdict == "non-inferior":
                    eligible.append(arm)

        def key(arm: str) -> tuple:
            c, tokens = mean_spend(arm, cost), mean_spend(arm, "total_tokens")
            return (c if c == c else float("inf"), tokens if tokens == tokens else float("inf"), arm)

        chosen = min(eligible, key=key)
        c, ref_cost = mean_spend(chosen, cost), mean_spend(reference, cost)
        rows.append(
            {"benchmark": benchmark, "main_agent": main, "task_type": task_type, "tier": tier, "arm": chosen}
            | {"cost": c, "reference_cost": ref_cost, "cost_ratio": c / ref_cost if ref_cost else float("nan")}
            | {"n_tasks": len(tasks), "n_non_inferior": len(eligible) - 1}
        )
    return pd.DataFrame(rows)


NONINFERIORITY = "eval/noninferiority.csv"


def noninferiority_table(results: Path) -> pd.DataFrame | None:
    """`eval/noninferiority.csv` of a results folder (`notebook.FILES["noninferiority"]`), or None (said in one
    line) where it has none: results from before issue 42."""
    path = Path(results) / NONINFERIORITY
    if not path.is_file():
        print(f"{path} is missing: these results predate the arms' non-inferiority table (issue 42)")
        return None
    return pd.read_csv(path)


def margin_of(table: pd.DataFrame | None, default: float = DEFAULT_MARGIN) -> float:
    """The margin `eval/noninferiority.csv` was computed with (its `margin` column), else `default`."""
    if table is None or "margin" not in table or table["margin"].dropna().empty:
        return default
    return float(table["margin"].dropna().iloc[0])
