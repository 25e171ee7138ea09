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

results = os.environ.get("TERMINUS_RESULTS", "results/cached")  # or a run folder; `make lab RUN=results/smoke` sets it
figures = os.environ.get("TERMINUS_FIGURES")  # default: <results>/figures (results/figures-cached for results/cached)

# %%
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
