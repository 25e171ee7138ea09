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
results = "results/cached"  # or a run folder, e.g. "results/smoke"
figures = None  # default: <results>/figures

# %%
from terminus import analysis

results, figures = analysis.setup(results, figures, globals().get("snakemake"))

# %%
summary = analysis.load(results, "eval_summary")
analysis.token_savings(summary)

# %%
fig = analysis.plot_delegation(summary)
analysis.save(fig, figures, "delegation")
