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
# # Case study (Serilog-style)
# One repair task without the subagent and with it: the main agent's tokens, turns and direct terminal calls,
# the subagent's commands, and the exact summary the main agent received.

# %% tags=["parameters"]
import os

# papermill's parameters: it reads `name = value  # help` lines and warns of any name it cannot find, so no other
# "=" on these lines. `make lab RUN=...` sets TERMINUS_RESULTS and TERMINUS_FIGURES.
results = os.environ.get("TERMINUS_RESULTS", "results/cached")  # a results folder: results/cached or a run's
figures = os.environ.get("TERMINUS_FIGURES")  # default: <results>/figures (results/figures-cached for results/cached)

# %%
from terminus.analysis.case_study import case_study_table, plot_case_study
from terminus.analysis.notebook import load, save, setup

results, figures = setup(results, figures, globals().get("snakemake"))

# %%
case = load(results, "case_study")
case_study_table(case)

# %% [markdown]
# The largest saving is the best case. The task of the median saving, beside it, is the typical one:

# %%
median = case.get("median_gap")
if median is None:
    print("this case_study.json predates the median-gap task (rerun `terminus case-study`)")
else:
    print(f"median-gap task {median['task_id']}: token ratio {median['token_ratio']} against {case['token_ratio']}")
    display(case_study_table(median))  # noqa: F821 (the notebook's display)

# %%
print(f"task {case['task_id']} ({case.get('source', 'synthetic')}), main agent {case['main_agent']}")
for call in case["with_subagent"]["calls"]:
    tokens = call.get("summary_tokens", "?")
    print(f"main agent asks: {call['query']}\nsubagent ran {len(call['commands'])} commands and returned "
          f"{tokens} tokens:\n")  # fmt: skip
    print(call["summary"], "\n")

# %%
fig = plot_case_study(case)
save(fig, figures, "case_study")
