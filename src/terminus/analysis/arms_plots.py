"""The evaluation notebook's figures of the arms (issue 42), from the records table: resolve rate against cost with
the Pareto front (`plot_pareto`), per-task cost ratios against `none × full` (`plot_cost_ratios`), and the routing
map (`plot_routing`). One colour per arm across all three (`palette.arm_palette`: its subagent's colour, as in every
figure; computed once from the records and passed to each). Where the records lack a column a figure needs (results
from before the context axis), the figure says which instead of failing, so that the notebook still runs on old
results."""

from __future__ import annotations

import logging

import pandas as pd

from terminus.analysis.arms import (
    NEEDED,
    TIERS,
    arm_table,
    cost_ratios,
    missing,
    pareto_front,
    ratio_summary,
    routing_table,
    with_arms,
)
from terminus.analysis.notebook import footnote
from terminus.analysis.palette import arm_palette

log = logging.getLogger(__name__)


def notice(title: str, text: str):
    """A figure that only says why there is nothing to plot (logged too)."""
    import matplotlib.pyplot as plt

    log.warning("%s: %s", title, text)
    fig, ax = plt.subplots(figsize=(8, 2.2))
    ax.axis("off")
    ax.set_title(title)
    ax.text(0.5, 0.5, text, ha="center", va="center", wrap=True, fontsize=10)
    return fig


def _lacking(records: pd.DataFrame, title: str, columns: tuple[str, ...]):
    gone = missing(records, columns)
    if gone:
        return notice(title, f"the records have no {', '.join(gone)}: results from before the context axis (issue 42)")
    if not pd.to_numeric(records["resolved"], errors="coerce").notna().any():
        return notice(title, "no benchmark in these records has an outcome (resolved)")
    return None


def _palette(records: pd.DataFrame, palette: dict[str, str] | None) -> dict[str, str]:
    return palette if palette is not None else arm_palette(with_arms(records)["arm"])


def _panels(n: int, width: float, height: float, *, stacked: bool = False):
    """n panels side by side (or one above the other), the figure at least 8 inches wide for its footnote."""
    import matplotlib.pyplot as plt

    shape, size = ((n, 1), (width, height * n)) if stacked else ((1, n), (max(8.0, width * n), height))
    fig, axes = plt.subplots(*shape, figsize=size, squeeze=False)
    return fig, list(axes.flat)


def plot_pareto(
    records: pd.DataFrame, *, cost: str = "cost_usd", palette: dict[str, str] | None = None, seed: int = 0
):
    """Per benchmark with outcomes: each arm's resolve rate against its mean cost per run, both with 95% cluster-
    bootstrap intervals over tasks, and the Pareto front (arms nothing is cheaper and better than) as a dashed line."""
    title = "Resolve rate against cost"
    lacking = _lacking(records, title, (*NEEDED, cost))
    if lacking is not None:
        return lacking
    table = arm_table(records, cost=cost, seed=seed).dropna(subset=[cost])
    if table.empty:
        return notice(title, f"no arm with an outcome has a {cost}")
    palette = _palette(records, palette)
    benchmarks = sorted(table["benchmark"].unique())
    fig, axes = _panels(len(benchmarks), 5.0, 4.2)
    for ax, benchmark in zip(axes, benchmarks, strict=True):
        rows = table[table["benchmark"] == benchmark]
        for _, r in rows.iterrows():
            ax.errorbar(
                r[cost],
                r["resolve_rate"],
                xerr=[[r[cost] - r[f"{cost}_lo"]], [r[f"{cost}_hi"] - r[cost]]],
                yerr=[[r["resolve_rate"] - r["resolve_rate_lo"]], [r["resolve_rate_hi"] - r["resolve_rate"]]],
                fmt="o",
                color=palette[r["arm"]],
                capsize=3,
                label=r["arm"],
            )
        front = rows.set_index("arm").loc[pareto_front(rows, x=cost)]
        ax.plot(front[cost], front["resolve_rate"], "--", color="#555", lw=1, label="Pareto front")
        ax.set(title=benchmark, xlabel=f"{cost} per run (95% CI)", ylabel="resolve rate (95% CI)")
        ax.legend(fontsize=7, loc="lower right")
    runs = ", ".join(f"{b}: {_n(table[table['benchmark'] == b])}" for b in benchmarks)
    footnote(fig, f"n = {runs}\n(intervals: cluster bootstrap over tasks, runs pooled)")
    return fig


def _n(rows: pd.DataFrame) -> str:
    tasks = "/".join(map(str, sorted(set(rows["n_tasks"]))))
    runs = sorted(set(rows["n_runs"]))
    return f"{tasks} tasks, {'/'.join(map(str, runs))} run{'s' * (runs != [1])} per arm"


def plot_cost_ratios(records: pd.DataFrame, *, full: str = "full", cost: str = "cost_usd", palette=None):
    """Per benchmark: each arm's per-task cost over its main agent's `none × full` on the same task (log scale),
    every task a dot, with the median (bar) and 90th percentile (triangle) written beside each arm: a mean would hide
    the tasks where an arm costs several times the reference."""
    title = f"Per-task {cost} ratio against none × {full}"
    lacking = _lacking(records, title, (*NEEDED, cost))
    if lacking is not None:
        return lacking
    ratios = cost_ratios(records, full=full, cost=cost)
    ratios = ratios[ratios["ratio"] > 0]
    if ratios.empty:
        return notice(title, f"no task has both an arm's and its none × {full} reference's {cost}")
    palette = _palette(records, palette)
    summary = ratio_summary(ratios)
    benchmarks = sorted(ratios["benchmark"].unique())
    height = 1.2 + 0.5 * ratios.groupby("benchmark")["arm"].nunique().max()
    fig, axes = _panels(len(benchmarks), 9.0, height, stacked=True)
    for ax, benchmark in zip(axes, benchmarks, strict=True):
        rows = summary[summary["benchmark"] == benchmark].sort_values("median").reset_index(drop=True)
        for y, r in rows.iterrows():
            dots = ratios[(ratios["benchmark"] == benchmark) & (ratios["arm"] == r["arm"])]["ratio"]
            colour = palette[r["arm"]]
            ax.scatter(dots, [y] * len(dots), color=colour, alpha=0.35, s=12)
            ax.scatter([r["median"]], [y], marker="|", s=300, color=colour, linewidths=2.5)
            ax.scatter([r["p90"]], [y], marker=">", s=40, color=colour)
        ax.axvline(1.0, color="#555", lw=1, ls="--")
        ax.set_xscale("log")
        labels = [
            f"{a}\nmedian ×{m:.2f}, p90 ×{p:.2f}, n={k}"
            for a, m, p, k in rows[["arm", "median", "p90", "n_tasks"]].values
        ]
        ax.set_yticks(range(len(rows)), labels, fontsize=8)
        ax.set(title=benchmark, xlabel=f"{cost} / none × {full} (per task, log)")
    footnote(fig, "one dot per task (each side averaged over its runs); bar: median; triangle: 90th percentile")
    return fig


def plot_routing(
    records: pd.DataFrame,
    margin: float,
    *,
    full: str = "full",
    cost: str = "cost_usd",
    palette: dict[str, str] | None = None,
    seed: int = 0,
):
    """The routing map: per benchmark and main agent, task types by difficulty tier (terciles of the main agent's
    tokens under `none × full`), each cell coloured by the cheapest arm non-inferior to `none × full` on its tasks
    (`arms.routing_table`), with its cost ratio to the reference and the cell's n."""
    title = "Routing map: cheapest non-inferior arm"
    lacking = _lacking(records, title, (*NEEDED, "task_type", "main_agent_tokens", cost))
    if lacking is not None:
        return lacking
    table = routing_table(records, margin, full=full, cost=cost, seed=seed)
    if table.empty:
        return notice(title, f"no benchmark with outcomes has a none × {full} arm with main-agent tokens")
    palette = _palette(records, palette)
    groups = sorted(table.groupby(["benchmark", "main_agent"]).groups)
    types = {
        g: sorted(table[(table["benchmark"] == g[0]) & (table["main_agent"] == g[1])]["task_type"].unique())
        for g in groups
    }
    fig, axes = _panels(len(groups), 5.5, 1.6 + 0.8 * max(len(t) for t in types.values()))
    for ax, (benchmark, main) in zip(axes, groups, strict=True):
        rows = table[(table["benchmark"] == benchmark) & (table["main_agent"] == main)]
        for _, r in rows.iterrows():
            x, y = TIERS.index(r["tier"]), types[(benchmark, main)].index(r["task_type"])
            ax.add_patch(_cell(x, y, palette.get(r["arm"], "#ccc")))
            ratio = "" if r["cost_ratio"] != r["cost_ratio"] else f"\ncost ×{r['cost_ratio']:.2f}"
            label = r["arm"].split("__", 1)[1].replace("__", " × ")
            ax.text(x, y, f"{label}{ratio}\nn={r['n_tasks']}", ha="center", va="center", fontsize=7)
        ax.set_xlim(-0.5, len(TIERS) - 0.5)
        ax.set_ylim(len(types[(benchmark, main)]) - 0.5, -0.5)
        ax.set_xticks(range(len(TIERS)), [f"{t} tokens" for t in TIERS])
        ax.set_yticks(range(len(types[(benchmark, main)])), types[(benchmark, main)])
        ax.grid(False)
        ax.set(title=f"{benchmark}, main agent {main}")
    footnote(
        fig,
        f"tier: tercile of main-agent tokens under none × {full}; non-inferior: 95% lower bound > -{margin:g}\n"
        f"(cluster bootstrap over the cell's tasks, no Holm); a cell no arm clears keeps none × {full}",
    )
    return fig


def _cell(x: int, y: int, colour: str):
    from matplotlib.patches import Rectangle

    return Rectangle((x - 0.48, y - 0.48), 0.96, 0.96, facecolor=colour, alpha=0.55, edgecolor="white")
