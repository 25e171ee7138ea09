"""The evaluation notebook's figure: resolve rate, main-agent tokens, fact recall and reward per subagent."""

from __future__ import annotations

import pandas as pd

from terminus.analysis.grid import grid_long, grid_n, interval_bars
from terminus.analysis.notebook import footnote, panels


def plot_grid(summary: pd.DataFrame):
    cells = [
        ("repair", "resolve_rate", "Repair: resolve rate"),
        ("repair", "main_agent_tokens", "Repair: main-agent tokens"),
        ("execution", "fact_recall", "Execution: fact recall"),
        ("execution", "reward", "Execution: Scorer reward"),
    ]
    fig, axes = panels(len(cells))
    long = grid_long(summary, [c[1] for c in cells])
    for ax, (bench, metric, title) in zip(axes, cells, strict=True):
        data = long[(long["benchmark"] == bench) & (long["metric"] == metric)] if not long.empty else long
        if data.empty:
            ax.set(title=f"{title} (no data)")
            ax.text(0.5, 0.5, "n/a", transform=ax.transAxes, ha="center", va="center", color="#555")
            continue
        interval_bars(ax, data, title, metric.replace("_", " ") + " (95% CI)")
    footnote(fig, grid_n(summary, ("repair", "execution")))
    return fig
