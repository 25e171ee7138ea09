"""The eval grid as the evaluation and delegation notebooks plot it: the summary's metrics in long form with their
intervals (`grid_long`), one colour per subagent, bars with 95% intervals, and the footnote's n."""

from __future__ import annotations

import pandas as pd


def grid_long(summary: pd.DataFrame, metrics: list[str]) -> pd.DataFrame:
    rows = []
    for _, r in summary.iterrows():
        for m in metrics:
            if m in r and pd.notna(r[m]) and r[m] != "":
                rows.append(
                    {
                        "subagent": r["subagent"],
                        "benchmark": r["benchmark"],
                        "main_agent": r["main_agent"],
                        "metric": m,
                        "value": float(r[m]),
                        "lo": float(r[f"{m}_lo"]),
                        "hi": float(r[f"{m}_hi"]),
                    }
                )
    return pd.DataFrame(rows)


SUBAGENT_ORDER = ["none", "scripted", "base", "sft", "grpo"]


def subagent_color(name: str) -> str:
    """One colour per subagent across every panel and notebook."""
    if name not in SUBAGENT_ORDER:
        SUBAGENT_ORDER.append(name)
    return f"C{SUBAGENT_ORDER.index(name) % 10}"


def interval_bars(ax, data: pd.DataFrame, title: str, ylabel: str):
    ax.bar(range(len(data)), data["value"], color=[subagent_color(s) for s in data["subagent"]])
    ax.errorbar(
        range(len(data)),
        data["value"],
        yerr=[data["value"] - data["lo"], data["hi"] - data["value"]],
        fmt="none",
        ecolor="black",
        capsize=4,
    )
    ax.set_xticks(range(len(data)), data["subagent"], rotation=20)
    ax.set(title=title, ylabel=ylabel)


def grid_n(summary: pd.DataFrame, benchmarks: tuple[str, ...]) -> str:
    """Episodes per cell (one per task) and seeds, by benchmark, for a figure's footnote."""
    parts = []
    for bench in benchmarks:
        rows = summary[summary["benchmark"] == bench]
        if rows.empty:
            continue
        ns = sorted({int(n) for n in rows["n"]})
        seeds = sorted({int(s) for s in rows["seed"]})
        parts.append(f"{bench}: {'/'.join(map(str, ns))} tasks per cell, {len(seeds)} seed{'s' * (len(seeds) > 1)}")
    return "n = " + "; ".join(parts) + " (one episode per task; intervals: bootstrap over tasks)"
