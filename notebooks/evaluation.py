# ---
# jupyter:
#   jupytext:
#     formats: ipynb,py:percent
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
#   language_info:
#     name: python
# ---

# %% [markdown]
# # The evaluation grid
# Every cell with its 95% bootstrap interval; the judge's validity next to it.

# %% tags=["parameters"]
import os

# papermill's parameters: it reads `name = value  # help` lines and warns of any name it cannot find, so no other
# "=" on these lines. `make lab RUN=...` sets TERMINUS_RESULTS and TERMINUS_FIGURES.
results = os.environ.get("TERMINUS_RESULTS", "results/cached")  # a results folder: results/cached or a run's
figures = os.environ.get("TERMINUS_FIGURES")  # default: <results>/figures (results/figures-cached for results/cached)

# %%
from terminus.analysis.arms import margin_of, noninferiority_table, palette_of
from terminus.analysis.arms_plots import plot_cost_ratios, plot_pareto, plot_routing
from terminus.analysis.evaluation import plot_grid
from terminus.analysis.notebook import load, save, setup

results, figures = setup(results, figures, globals().get("snakemake"))

# %%
summary = load(results, "eval_summary")
summary[["main_agent", "subagent", "benchmark", "n", "resolve_rate", "main_agent_tokens", "fact_recall", "reward"]]

# %%
validity = load(results, "validity")
{k: validity[k] for k in ("fact_checker", "llm_judge", "agreement")}

# %%
fig = plot_grid(summary)
save(fig, figures, "evaluation")

# %% [markdown]
# ## The arms: main agent × subagent × context
# Each arm against its main agent's `none × full` and the best of `none × {truncate, mask}`
# (`eval/noninferiority.csv`): the paired per-task difference in resolve rate (runs averaged within a task), its 95%
# cluster-bootstrap interval, Holm across a benchmark's arms, and the verdict at the config's margin (rate units:
# 0.025 is 2.5 points). One colour per arm in every figure below. Results from before the context axis (issue 42)
# have no arms: the figures say so.

# %%
records = load(results, "eval_records")
palette = palette_of(records)
noninferiority = noninferiority_table(results)  # None for results from before issue 42
margin = margin_of(noninferiority)  # the table's margin; else the paper config's 0.025
noninferiority

# %%
fig = plot_pareto(records, palette=palette)
save(fig, figures, "arms_pareto")

# %% [markdown]
# Per task, each arm's cost over its main agent's `none × full` on the same task: the median and the 90th
# percentile, since a mean hides the tasks where an arm costs several times the reference.

# %%
fig = plot_cost_ratios(records, palette=palette)
save(fig, figures, "arms_cost_ratios")

# %% [markdown]
# The routing map: per task type and difficulty tier (terciles of the task's main-agent tokens under `none × full`),
# the cheapest arm non-inferior to `none × full` on that cell's tasks; a cell too small to show anything keeps the
# reference.

# %%
fig = plot_routing(records, margin, palette=palette)
save(fig, figures, "arms_routing")
