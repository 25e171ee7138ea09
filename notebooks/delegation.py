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
# # Delegation and token savings
# Main-agent tokens, turns and direct terminal calls with each subagent, against No-Subagent.

# %% tags=["parameters"]
import os

# papermill's parameters: it reads `name = value  # help` lines and warns of any name it cannot find, so no other
# "=" on these lines. `make lab RUN=...` sets TERMINUS_RESULTS and TERMINUS_FIGURES.
results = os.environ.get("TERMINUS_RESULTS", "results/cached")  # a results folder: results/cached or a run's
figures = os.environ.get("TERMINUS_FIGURES")  # default: <results>/figures (results/figures-cached for results/cached)

# %%
from terminus.analysis.delegation import plot_delegation, token_savings
from terminus.analysis.notebook import load, save, setup

results, figures = setup(results, figures, globals().get("snakemake"))

# %%
summary = load(results, "eval_summary")
token_savings(summary)

# %%
fig = plot_delegation(summary)
save(fig, figures, "delegation")
