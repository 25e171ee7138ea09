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
# # Training curves
# SFT loss, GRPO reward (with its spread within groups), and base vs SFT vs GRPO on held-out tasks.

# %% tags=["parameters"]
import os

results = os.environ.get("TERMINUS_RESULTS", "results/cached")  # or a run folder; `make lab RUN=results/smoke` sets it
figures = os.environ.get("TERMINUS_FIGURES")  # default: <results>/figures

# %%
from terminus import analysis

results, figures = analysis.setup(results, figures, globals().get("snakemake"))

# %%
sft = analysis.load(results, "sft_metrics")
grpo = analysis.load(results, "grpo_metrics")
summary = analysis.load(results, "training")
{k: summary[k] for k in ("base", "sft", "grpo")}

# %%
fig = analysis.plot_training(sft, grpo, summary)
analysis.save(fig, figures, "training")
