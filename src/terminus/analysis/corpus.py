"""The corpus notebook's tables and figure: task types next to the paper's, languages, sources, splits."""

from __future__ import annotations

import pandas as pd

from terminus.analysis.notebook import footnote, panels
from terminus.analysis.palette import OURS, PAPER, bars, legend


def corpus_tables(stats: dict) -> dict[str, pd.DataFrame]:
    types = pd.DataFrame(
        [{"task type": k, "ours": v["ours_share"], "paper": v["paper_share"]} for k, v in stats["by_type"].items()]
    ).melt("task type", var_name="corpus", value_name="share")
    languages = pd.Series(stats["by_language"], name="tasks").rename_axis("language").reset_index()
    splits = pd.Series(stats["by_split"], name="tasks").rename_axis("split").reset_index()
    sources = pd.Series(stats["by_source"], name="tasks").rename_axis("source").reset_index()
    return {"types": types, "languages": languages, "splits": splits, "sources": sources}


def plot_corpus(stats: dict):
    t = corpus_tables(stats)
    fig, axes = panels(4)
    types = t["types"].pivot(index="task type", columns="corpus", values="share")
    for offset, corpus, colour in ((-0.2, "ours", OURS), (0.2, "paper", PAPER)):
        x = [i + offset for i in range(len(types))]
        bars(axes[0], x, types[corpus] if corpus in types else [None] * len(types), colours=[colour] * len(types),
             width=0.4)  # fmt: skip
    axes[0].set_xticks(range(len(types)), types.index, rotation=20, ha="right")
    legend(axes[0], {"ours": OURS, "paper": PAPER})
    axes[0].set(title="Task types: ours vs the paper's", ylabel="share of tasks", xlabel="")
    for ax, key, x in (
        (axes[1], "languages", "language"),
        (axes[2], "sources", "source"),
        (axes[3], "splits", "split"),
    ):
        bars(ax, range(len(t[key])), t[key]["tasks"], colours=[OURS] * len(t[key]))
        ax.set_xticks(range(len(t[key])), t[key][x])
        ax.set(title=f"Tasks by {x}", ylabel="tasks", xlabel="")
    footnote(fig, f"n = {int(t['splits']['tasks'].sum())} tasks from {stats.get('repos', '?')} repositories")
    return fig
