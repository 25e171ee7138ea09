"""The case study notebook's table and figure: one task without the subagent and with it."""

from __future__ import annotations

import pandas as pd

from terminus.analysis.notebook import footnote, panels
from terminus.analysis.palette import bars, model_colour


def case_study_table(case: dict) -> pd.DataFrame:
    keys = ["main_agent_tokens", "main_agent_turns", "direct_terminal_calls", "subagent_calls", "subagent_commands"]
    keys.append("resolved")
    return pd.DataFrame(
        {
            "without subagent": [case["without_subagent"].get(k, 0) for k in keys],
            "with subagent": [case["with_subagent"].get(k, 0) for k in keys],
        },
        index=keys,
    )


def plot_case_study(case: dict):
    table = case_study_table(case).drop(index="resolved").astype(float)
    fig, axes = panels(len(table), cols=3, height=3.2)
    colours = [model_colour("none"), model_colour(case["subagent"])]  # without: no subagent; with: its colour
    for ax, (metric, row) in zip(axes, table.iterrows(), strict=True):
        bars(ax, [0, 1], row.values, colours=colours)
        ax.set_xticks([0, 1], ["without", "with"])
        ax.set(title=metric.replace("_", " "))
    fig.suptitle(f"Case study: {case['task_id']} (main agent {case['main_agent']}, subagent {case['subagent']})")
    calls = len(case["with_subagent"].get("calls", []))
    footnote(fig, f"n = 1 task, one episode without the subagent and one with it ({calls} subagent calls); one seed")
    return fig
