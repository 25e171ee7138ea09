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
                        "context": r.get("context", "full"),
                        "label": _label(r["subagent"], r.get("context", "full")),
                        "benchmark": r["benchmark"],
                        "main_agent": r["main_agent"],
                        "metric": m,
                        "value": float(r[m]),
                        "lo": float(r[f"{m}_lo"]),
                        "hi": float(r[f"{m}_hi"]),
                    }
                )
    return pd.DataFrame(rows)


def _label(subagent: str, context) -> str:
    """An arm's bar label: the subagent, and the main agent's context where it is not the full one."""
    return subagent if context in ("full", None) or context != context else f"{subagent}/{context}"


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
    ax.set_xticks(range(len(data)), data["label"] if "label" in data else data["subagent"], rotation=30, ha="right")
    ax.set(title=title, ylabel=ylabel)


def grid_n(summary: pd.DataFrame, benchmarks: tuple[str, ...]) -> str:
    """Episodes per cell (one per task) and seeds, by benchmark, for a figure's footnote."""
    parts = []
    for bench in benchmarks:
        rows = summary[summary["benchmark"] == bench]
        if rows.empty:
            continue
        ns = sorted({int(n) for n in rows["n"]})
        runs = sorted({int(s) for s in rows["runs"]}) if "runs" in rows else [len(set(rows["seed"]))]
        parts.append(f"{bench}: {'/'.join(map(str, ns))} tasks per arm, {'/'.join(map(str, runs))} run(s) each")
    return "n = " + "; ".join(parts) + " (intervals: bootstrap over tasks, each task's runs together)"
