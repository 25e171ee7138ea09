# ---
# jupyter:
#   jupytext:
#     formats: ipynb,py:percent
#     notebook_metadata_filter: language_info
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
#       jupytext_version: 1.19.6
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

# papermill's parameters: it reads `name = value  # help` lines and warns of any name it cannot find, so no other
# "=" on these lines. `make lab RUN=...` sets TERMINUS_RESULTS and TERMINUS_FIGURES.
results = os.environ.get("TERMINUS_RESULTS", "results/cached")  # a results folder: results/cached or a run's
figures = os.environ.get("TERMINUS_FIGURES")  # default: <results>/figures (results/figures-cached for results/cached)

# %%
from terminus.analysis.notebook import load, save, setup
from terminus.analysis.training import learning_table, load_learning, plot_learning, plot_training

results, figures = setup(results, figures, globals().get("snakemake"))

# %%
sft = load(results, "sft_metrics")
grpo = load(results, "grpo_metrics")
summary = load(results, "training")
{k: summary[k] for k in ("base", "sft", "grpo")}

# %%
fig = plot_training(sft, grpo, summary)
save(fig, figures, "training")

# %% [markdown]
# ## Does the tiny model learn the task? (`make learning`: configs/learning.yaml, three seeds)
# Each seed is a whole run (corpus, model, SFT, GRPO). Left: SFT loss per seed; middle: GRPO's Scorer reward per
# seed, with the mean and the spread over seeds; right: held-out fact recall of base, SFT and GRPO, the mean over
# seeds with its 95% interval and each seed as a dot. `results/benchmarks/learning.json` checks the targets.

# %%
runs = load_learning(results)
if runs is None:
    print(f"no learning runs under {results}/learning (they are in results/cached/learning)")
else:
    display(learning_table(runs))  # noqa: F821 (Jupyter's display)
    fig = plot_learning(runs)
    save(fig, figures, "learning")
