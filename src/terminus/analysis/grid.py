"""The eval grid as the evaluation and delegation notebooks plot it: the summary's metrics in long form with their
intervals (`grid_long`), bars with 95% intervals in each subagent's colour (`palette`), zero and missing values told
apart, and the footnote's n."""

from __future__ import annotations

import pandas as pd

from terminus.analysis.palette import bars, model_colour, order


def grid_long(summary: pd.DataFrame, metrics: list[str]) -> pd.DataFrame:
    """One row per summary row and metric it has a column for; a cell without a value (empty in the CSV) keeps its
    row with NaN, so that its bar says "n/a" instead of vanishing."""
    rows = []
    for _, r in summary.iterrows():
        for m in metrics:
            if m in r:
                rows.append(
                    {
                        "subagent": r["subagent"],
                        "context": r.get("context", "full"),
                        "label": _label(r["subagent"], r.get("context", "full")),
                        "benchmark": r["benchmark"],
                        "main_agent": r["main_agent"],
                        "metric": m,
                        "value": _number(r[m]),
                        "lo": _number(r.get(f"{m}_lo")),
                        "hi": _number(r.get(f"{m}_hi")),
                    }
                )
    return pd.DataFrame(rows)


def _number(value) -> float:
    number = pd.to_numeric(value, errors="coerce") if value is not None else float("nan")
    return float(number) if pd.notna(number) else float("nan")


def _label(subagent: str, context) -> str:
    """An arm's bar label: the subagent, and the main agent's context where it is not the full one."""
    return subagent if context in ("full", None) or context != context else f"{subagent}/{context}"


def interval_bars(ax, data: pd.DataFrame, title: str, ylabel: str):
    """One bar per row in its subagent's colour, subagents in the palette's order (none, scripted, base, SFT,
    GRPO) in every panel, each with its 95% interval; "0" on a zero bar, "n/a" where the value is missing."""
    labels = data["label"] if "label" in data else data["subagent"]
    data = data.iloc[sorted(range(len(data)), key=lambda i: (order(data["subagent"].iloc[i]), str(labels.iloc[i])))]
    x = range(len(data))
    errors = (data["value"] - data["lo"], data["hi"] - data["value"])
    bars(ax, x, data["value"], colours=[model_colour(s) for s in data["subagent"]], errors=errors)
    ax.set_xticks(x, data["label"] if "label" in data else data["subagent"], rotation=30, ha="right")
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
