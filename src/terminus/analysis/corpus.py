"""The corpus notebook's tables and figure: task types next to the paper's, languages, sources, splits."""

from __future__ import annotations

import pandas as pd

from terminus.analysis.notebook import footnote


def corpus_tables(stats: dict) -> dict[str, pd.DataFrame]:
    types = pd.DataFrame(
        [{"task type": k, "ours": v["ours_share"], "paper": v["paper_share"]} for k, v in stats["by_type"].items()]
    ).melt("task type", var_name="corpus", value_name="share")
    languages = pd.Series(stats["by_language"], name="tasks").rename_axis("language").reset_index()
    splits = pd.Series(stats["by_split"], name="tasks").rename_axis("split").reset_index()
    sources = pd.Series(stats["by_source"], name="tasks").rename_axis("source").reset_index()
    return {"types": types, "languages": languages, "splits": splits, "sources": sources}


def plot_corpus(stats: dict):
    import matplotlib.pyplot as plt
    import seaborn as sns

    t = corpus_tables(stats)
    fig, axes = plt.subplots(1, 4, figsize=(16, 3.8))
    sns.barplot(t["types"], x="task type", y="share", hue="corpus", ax=axes[0])
    axes[0].set(title="Task types: ours vs the paper's", ylabel="share of tasks", xlabel="")
    axes[0].tick_params(axis="x", rotation=20)
    for ax, key, x in (
        (axes[1], "languages", "language"),
        (axes[2], "sources", "source"),
        (axes[3], "splits", "split"),
    ):
        sns.barplot(t[key], x=x, y="tasks", ax=ax, color="C0")
        ax.set(title=f"Tasks by {x}", ylabel="tasks", xlabel="")
    footnote(fig, f"n = {int(t['splits']['tasks'].sum())} tasks from {stats.get('repos', '?')} repositories")
    return fig
