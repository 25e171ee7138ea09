"""The delegation notebook's table and figure: what the main agent did itself and what it delegated, per subagent."""

from __future__ import annotations

import pandas as pd

from terminus.analysis.grid import grid_long, grid_n, interval_bars
from terminus.analysis.notebook import footnote, panels


def plot_delegation(summary: pd.DataFrame):
    repair = summary[summary["benchmark"] == "repair"]
    long = grid_long(repair, ["main_agent_tokens", "main_agent_turns", "direct_terminal_calls", "subagent_calls"])
    fig, axes = panels(4)
    for ax, metric in zip(
        axes, ["main_agent_tokens", "main_agent_turns", "direct_terminal_calls", "subagent_calls"], strict=True
    ):
        data = long[long["metric"] == metric] if not long.empty else long
        if data.empty:
            ax.set(title=f"{metric.replace('_', ' ')} (no data)")
            ax.text(0.5, 0.5, "n/a", transform=ax.transAxes, ha="center", va="center", color="#555")
        else:
            interval_bars(ax, data, metric.replace("_", " "), "per episode (95% CI)")
    footnote(fig, grid_n(summary, ("repair",)))
    return fig


def token_savings(summary: pd.DataFrame) -> pd.DataFrame:
    """Per arm (subagent, and the main agent's context): main-agent tokens relative to No-Subagent under the full
    context, resolve rates side by side."""
    repair = summary[summary["benchmark"] == "repair"]
    if "context" not in repair:
        repair = repair.assign(context="full")
    full = repair[(repair["subagent"] == "none") & (repair["context"] == "full")]
    if full.empty:
        return pd.DataFrame()
    base = full.iloc[0]
    rows = []
    for _, r in repair.iterrows():
        rows.append(
            {
                "subagent": r["subagent"],
                "context": r["context"],
                "token_ratio": round(r["main_agent_tokens"] / base["main_agent_tokens"], 3),
                "resolve_rate": r["resolve_rate"],
                "resolve_rate_no_subagent": base["resolve_rate"],
                "direct_terminal_calls": r["direct_terminal_calls"],
                "subagent_calls": r["subagent_calls"],
            }
        )
    return pd.DataFrame(rows)
