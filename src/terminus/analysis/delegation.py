"""The delegation notebook's table and figure: what the main agent did itself and what it delegated, per subagent."""

from __future__ import annotations

import pandas as pd

from terminus.analysis.grid import grid_long, grid_n, interval_bars
from terminus.analysis.notebook import footnote


def plot_delegation(summary: pd.DataFrame):
    import matplotlib.pyplot as plt

    repair = summary[summary["benchmark"] == "repair"]
    long = grid_long(repair, ["main_agent_tokens", "main_agent_turns", "direct_terminal_calls", "subagent_calls"])
    fig, axes = plt.subplots(1, 4, figsize=(17, 3.8))
    for ax, metric in zip(
        axes, ["main_agent_tokens", "main_agent_turns", "direct_terminal_calls", "subagent_calls"], strict=True
    ):
        data = long[long["metric"] == metric]
        if not data.empty:
            interval_bars(ax, data, metric.replace("_", " "), "per episode (95% CI)")
    footnote(fig, grid_n(summary, ("repair",)))
    return fig


def token_savings(summary: pd.DataFrame) -> pd.DataFrame:
    """Per subagent: main-agent tokens relative to No-Subagent, resolve rates side by side."""
    repair = summary[summary["benchmark"] == "repair"].set_index("subagent")
    if "none" not in repair.index:
        return pd.DataFrame()
    base = repair.loc["none"]
    rows = []
    for sub, r in repair.iterrows():
        rows.append(
            {
                "subagent": sub,
                "token_ratio": round(r["main_agent_tokens"] / base["main_agent_tokens"], 3),
                "resolve_rate": r["resolve_rate"],
                "resolve_rate_no_subagent": base["resolve_rate"],
                "direct_terminal_calls": r["direct_terminal_calls"],
                "subagent_calls": r["subagent_calls"],
            }
        )
    return pd.DataFrame(rows)
