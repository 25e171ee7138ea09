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
# # The task corpus
# Languages, task types (next to the paper's 2,692 / 2,166 / 969 / 106), sources and the split by repository.

# %% tags=["parameters"]
import os

# papermill's parameters: it reads `name = value  # help` lines and warns of any name it cannot find, so no other
# "=" on these lines. `make lab RUN=...` sets TERMINUS_RESULTS and TERMINUS_FIGURES.
results = os.environ.get("TERMINUS_RESULTS", "results/cached")  # a results folder: results/cached or a run's
figures = os.environ.get("TERMINUS_FIGURES")  # default: <results>/figures (results/figures-cached for results/cached)

# %%
from terminus.analysis.corpus import corpus_tables, plot_corpus
from terminus.analysis.notebook import load, save, setup

results, figures = setup(results, figures, globals().get("snakemake"))

# %%
stats = load(results, "corpus")
tables = corpus_tables(stats)
tables["types"].pivot(index="task type", columns="corpus", values="share")

# %%
fig = plot_corpus(stats)
save(fig, figures, "corpus")
