"""The evaluation notebook's figure: resolve rate, main-agent tokens, fact recall and reward per subagent."""

from __future__ import annotations

import pandas as pd

from terminus.analysis.grid import grid_long, grid_n, interval_bars
from terminus.analysis.notebook import footnote


def plot_grid(summary: pd.DataFrame):
    import matplotlib.pyplot as plt

    panels = [
        ("repair", "resolve_rate", "Repair: resolve rate"),
        ("repair", "main_agent_tokens", "Repair: main-agent tokens"),
        ("execution", "fact_recall", "Execution: fact recall"),
        ("execution", "reward", "Execution: Scorer reward"),
    ]
    fig, axes = plt.subplots(1, len(panels), figsize=(4.2 * len(panels), 3.8))
    long = grid_long(summary, [p[1] for p in panels])
    for ax, (bench, metric, title) in zip(axes, panels, strict=True):
        data = long[(long["benchmark"] == bench) & (long["metric"] == metric)]
        if data.empty:
            ax.set(title=f"{title} (no data)")
            continue
        interval_bars(ax, data, title, metric.replace("_", " ") + " (95% CI)")
    footnote(fig, grid_n(summary, ("repair", "execution")))
    return fig
