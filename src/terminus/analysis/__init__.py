"""From result tables to figures. Notebooks call these and nothing heavier; everything reads a results folder
(a run's `results/<run>/` or the committed `results/cached/`) laid out the same way."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pandas as pd

from terminus.stats import mean_interval

log = logging.getLogger(__name__)

FILES = {
    "corpus": "tasks/tasks.stats.json",
    "validation": "tasks/valid.validation.json",
    "sft_metrics": "models/sft/metrics.jsonl",
    "grpo_metrics": "models/grpo/metrics.jsonl",
    "training": "training/summary.json",
    "eval_summary": "eval/summary.csv",
    "eval_records": "eval/records.jsonl",
    "case_study": "eval/case_study.json",
    "validity": "judge/validity.json",
}


def repository(start: Path | None = None) -> Path:
    """The checkout a notebook sits in: the first folder, from `start` (default: the working directory, which
    Jupyter sets to the notebook's folder) upwards, that holds `notebooks/` and `Snakefile`; else `start` itself.
    Not the installed package's checkout: a notebook opened in another clone reads that clone's results."""
    start = Path(start or Path.cwd()).resolve()
    for folder in (start, *start.parents):
        if (folder / "notebooks").is_dir() and (folder / "Snakefile").is_file():
            return folder
    return start


def figures_folder(results: Path, repo: Path) -> Path:
    """Where a notebook writes its figures when it is not told: the run's `figures/` (ignored by git), except for
    the committed `results/cached/`, whose figures go to `results/figures-cached/` so that nothing tracked changes."""
    cached = (repo / "results" / "cached").resolve()
    results = results.resolve()
    if results == cached or cached in results.parents:
        return repo / "results" / f"figures-{results.name}"
    return results / "figures"


def setup(results: str | Path, figures: str | Path | None = None, snakemake=None) -> tuple[Path, Path]:
    """The results folder and the figures folder; under Snakemake they come from the rule. A relative path is
    taken against the repository the notebook sits in (`repository()`), so it means the same whatever the kernel's
    working directory."""
    if snakemake is not None:
        results, figures = snakemake.params.results, Path(snakemake.output[0]).parent
    repo = repository()
    results = Path(results).expanduser()
    if not results.is_absolute():
        results = repo / results
    if not results.is_dir():
        raise FileNotFoundError(f"results folder {results} does not exist")
    figures = Path(figures).expanduser() if figures else figures_folder(results, repo)
    if not figures.is_absolute():
        figures = repo / figures
    figures.mkdir(parents=True, exist_ok=True)
    import seaborn as sns

    # No backend is forced: in a Jupyter kernel (lab, papermill, Snakemake's notebook rules) matplotlib's inline
    # backend is in place, and `save` shows each figure in the notebook itself.
    sns.set_theme(style="whitegrid", context="notebook")
    return results, figures


def load(results: Path, name: str):
    path = Path(results) / FILES[name]
    if not path.is_file():
        raise FileNotFoundError(f"{path} is missing: run the stage that writes it, or point at results/cached")
    if path.suffix == ".csv":
        return pd.read_csv(path)
    if path.suffix == ".jsonl":
        return pd.DataFrame([json.loads(x) for x in path.read_text().splitlines() if x.strip()])
    return json.loads(path.read_text())


def footnote(fig, text: str) -> None:
    """The sample sizes under a figure (tasks, episodes, seeds), so that no figure is read without its n."""
    fig.text(0.01, 0.005, text, ha="left", va="bottom", fontsize=9, color="#444")


def save(fig, figures: Path, name: str) -> None:
    """Write the figure to `<figures>/<name>.png` (atomically) and show it in the notebook, once, as that PNG, with
    the path it was written to. Returns nothing, so that a cell ending on it shows the figure, not a path."""
    import io
    import os
    import tempfile

    import matplotlib.pyplot as plt

    path = Path(figures) / f"{name}.png"
    fig.tight_layout(rect=(0, 0.06, 1, 1))
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=120)
    plt.close(fig)  # the inline backend would show it a second time at the end of the cell
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{name}.", suffix=".png")
    with os.fdopen(fd, "wb") as out:
        out.write(buffer.getvalue())
    os.replace(tmp, path)
    log.info("figure written to %s", path)
    try:
        from IPython import get_ipython
        from IPython.display import Image, Markdown, display
    except ImportError:  # plain Python: the file is the figure
        return
    if get_ipython() is not None:
        display(Image(data=buffer.getvalue(), format="png"))
        display(Markdown(f"written to `{path}`"))


# -- corpus -------------------------------------------------------------------------------------------------
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


# -- training -----------------------------------------------------------------------------------------------
def plot_training(sft: pd.DataFrame, grpo: pd.DataFrame, summary: dict):
    import matplotlib.pyplot as plt
    import seaborn as sns

    fig, axes = plt.subplots(1, 3, figsize=(15, 3.8))
    loss = sft.dropna(subset=["loss"]) if "loss" in sft else sft.iloc[0:0]
    axes[0].plot(loss["step"], loss["loss"], label="train loss")
    if "eval_loss" in sft:
        ev = sft.dropna(subset=["eval_loss"])
        axes[0].plot(ev["step"], ev["eval_loss"], "o-", label="validation loss")
    axes[0].set(title="SFT", xlabel="step", ylabel="loss")
    axes[0].legend()
    rw = grpo.dropna(subset=["reward"]) if "reward" in grpo else grpo.iloc[0:0]
    axes[1].plot(rw["step"], rw["reward"], "o-", label="mean reward")
    if "reward_std" in rw:
        axes[1].fill_between(
            rw["step"],
            rw["reward"] - rw["reward_std"],
            rw["reward"] + rw["reward_std"],
            alpha=0.2,
            label="± spread within groups",
        )
    axes[1].set(title="GRPO", xlabel="step", ylabel="reward (Scorer)")
    axes[1].legend()
    rows = [
        {"model": m, "metric": k, "value": summary[m][k]}
        for m in ("base", "sft", "grpo")
        if m in summary
        for k in ("final_answer_rate", "fact_recall")
    ]
    sns.barplot(pd.DataFrame(rows), x="metric", y="value", hue="model", ax=axes[2])
    axes[2].set(title="Held-out tasks", ylabel="", xlabel="", ylim=(0, 1))
    held_out = {summary[m].get("n") for m in ("base", "sft", "grpo") if m in summary}
    footnote(
        fig,
        f"n: SFT {int(loss['step'].max()) if len(loss) else 0} steps; GRPO {len(rw)} steps "
        f"(mean and spread over each step's rollout group); held-out: {', '.join(map(str, sorted(held_out)))} "
        "episodes per model (one per task, one seed)",
    )
    return fig


def load_learning(results: Path) -> dict[int, dict] | None:
    """The learning runs' tables (`make learning` -> <results>/learning/seed-<s>/), or None where there are none."""
    folder = Path(results) / "learning"
    seeds = sorted(folder.glob("seed-*")) if folder.is_dir() else []
    if not seeds:
        return None

    def frame(path: Path) -> pd.DataFrame:
        return pd.DataFrame([json.loads(x) for x in path.read_text().splitlines() if x.strip()])

    def before_after(path: Path) -> dict | None:
        return json.loads(path.read_text()).get("report") if path.is_file() else None

    return {
        int(d.name.split("-")[1]): {
            "summary": json.loads((d / "training__summary.json").read_text()),
            "sft": frame(d / "models__sft__metrics.jsonl"),
            "grpo": frame(d / "models__grpo__metrics.jsonl"),
            "before_after": before_after(d / "models__grpo__before_after.json"),
        }
        for d in seeds
    }


def seed_interval(values: list[float]) -> tuple[float, float]:
    """Mean and the half-width of its 95% t-interval over seeds (0 for one seed)."""
    return mean_interval(values)


def learning_table(runs: dict[int, dict]) -> pd.DataFrame:
    """Base, SFT and GRPO on held-out tasks: mean over seeds with a 95% interval, and each seed's value."""
    rows = []
    for stage in ("base", "sft", "grpo"):
        for key in ("final_answer_rate", "fact_recall"):
            values = [r["summary"][stage][key] for r in runs.values()]
            mean, half = seed_interval(values)
            rows.append({"model": stage, "metric": key, "mean": round(mean, 3), "ci95": round(half, 3),
                         **{f"seed {s}": r["summary"][stage][key] for s, r in runs.items()}})  # fmt: skip
    return pd.DataFrame(rows)


def plot_before_after(ax, reports: dict[int, dict]) -> None:
    """Per seed: GRPO's tasks' mean reward before and after it, and the paired difference with its 95% interval
    over tasks (models/grpo/before_after.json)."""
    seeds = sorted(reports)
    for i, seed in enumerate(seeds):
        r = reports[seed]
        ax.plot([i - 0.15, i + 0.15], [r["before"], r["after"]], "o-", color="#4c72b0", alpha=0.6)
        low, high = r["ci95"]
        ax.errorbar(i + 0.3, r["diff"], yerr=[[r["diff"] - low], [high - r["diff"]]], fmt="s", color="#dd8452",
                    capsize=5)  # fmt: skip
    ax.axhline(0, color="k", lw=0.8)
    ax.set_xticks(range(len(seeds)), [f"seed {s}" for s in seeds])
    n = {(r["tasks"], r["samples_per_task"]) for r in reports.values()}
    ax.set(title="GRPO on its tasks: before -> after (dots), diff with 95% CI (squares)", ylabel="reward")
    ax.title.set_fontsize(9)
    ax.set_xlabel(", ".join(f"{t} tasks x {k} samples" for t, k in sorted(n)))


def plot_learning(runs: dict[int, dict]):
    """Each seed's SFT loss and GRPO reward with the spread over seeds, and held-out recall with intervals."""
    import matplotlib.pyplot as plt

    measured = {seed: run["before_after"] for seed, run in runs.items() if run.get("before_after")}
    fig, axes = plt.subplots(1, 4 if measured else 3, figsize=(20 if measured else 15, 3.8))
    for col, (stage, metric, title) in enumerate((("sft", "loss", "SFT loss"), ("grpo", "reward", "GRPO reward"))):
        curves = []
        for seed, run in runs.items():
            data = run[stage].dropna(subset=[metric]) if metric in run[stage] else run[stage].iloc[0:0]
            axes[col].plot(data["step"], data[metric], alpha=0.5, label=f"seed {seed}")
            curves.append(data.set_index("step")[metric])
        if curves:
            both = pd.concat(curves, axis=1)
            axes[col].plot(both.index, both.mean(axis=1), "k-", label="mean")
            axes[col].fill_between(both.index, both.min(axis=1), both.max(axis=1), color="k", alpha=0.1,
                                   label="spread over seeds")  # fmt: skip
        axes[col].set(title=title, xlabel="step", ylabel=metric)
        axes[col].legend(fontsize=8)
    table = learning_table(runs)
    recall = table[table["metric"] == "fact_recall"]
    axes[2].bar(recall["model"], recall["mean"], yerr=recall["ci95"], capsize=6, color=["#999", "#4c72b0", "#dd8452"])
    for i, (_, row) in enumerate(recall.iterrows()):
        seeds = [row[c] for c in row.index if c.startswith("seed ")]
        axes[2].scatter([i] * len(seeds), seeds, color="k", s=12, zorder=3)
    axes[2].set(title="Held-out fact recall (95% CI over seeds)", ylim=(0, 1), ylabel="fact recall")
    if measured:
        plot_before_after(axes[3], measured)
    held_out = sorted({r["summary"]["sft"].get("n") for r in runs.values()} - {None})
    footnote(
        fig,
        f"n = {len(runs)} seeds ({', '.join(map(str, runs))}), each a whole run; held-out: "
        f"{', '.join(map(str, held_out))} episodes per model and seed (one per task)",
    )
    return fig


# -- the grid -----------------------------------------------------------------------------------------------
def grid_long(summary: pd.DataFrame, metrics: list[str]) -> pd.DataFrame:
    rows = []
    for _, r in summary.iterrows():
        for m in metrics:
            if m in r and pd.notna(r[m]) and r[m] != "":
                rows.append(
                    {
                        "subagent": r["subagent"],
                        "benchmark": r["benchmark"],
                        "main_agent": r["main_agent"],
                        "metric": m,
                        "value": float(r[m]),
                        "lo": float(r[f"{m}_lo"]),
                        "hi": float(r[f"{m}_hi"]),
                    }
                )
    return pd.DataFrame(rows)


SUBAGENT_ORDER = ["none", "scripted", "base", "sft", "grpo"]


def subagent_color(name: str) -> str:
    """One colour per subagent across every panel and notebook."""
    if name not in SUBAGENT_ORDER:
        SUBAGENT_ORDER.append(name)
    return f"C{SUBAGENT_ORDER.index(name) % 10}"


def _interval_bars(ax, data: pd.DataFrame, title: str, ylabel: str):
    ax.bar(range(len(data)), data["value"], color=[subagent_color(s) for s in data["subagent"]])
    ax.errorbar(
        range(len(data)),
        data["value"],
        yerr=[data["value"] - data["lo"], data["hi"] - data["value"]],
        fmt="none",
        ecolor="black",
        capsize=4,
    )
    ax.set_xticks(range(len(data)), data["subagent"], rotation=20)
    ax.set(title=title, ylabel=ylabel)


def grid_n(summary: pd.DataFrame, benchmarks: tuple[str, ...]) -> str:
    """Episodes per cell (one per task) and seeds, by benchmark, for a figure's footnote."""
    parts = []
    for bench in benchmarks:
        rows = summary[summary["benchmark"] == bench]
        if rows.empty:
            continue
        ns = sorted({int(n) for n in rows["n"]})
        seeds = sorted({int(s) for s in rows["seed"]})
        parts.append(f"{bench}: {'/'.join(map(str, ns))} tasks per cell, {len(seeds)} seed{'s' * (len(seeds) > 1)}")
    return "n = " + "; ".join(parts) + " (one episode per task; intervals: bootstrap over tasks)"


def plot_grid(summary: pd.DataFrame):
    import matplotlib.pyplot as plt

    panels = [
        ("repair", "resolve_rate", "Repair: resolve rate"),
        ("repair", "main_agent_tokens", "Repair: main-agent tokens"),
        ("execution", "fact_recall", "Execution: fact recall"),
        ("execution", "reward", "Execution: Scorer reward"),
    ]
    fig, axes = plt.subplots(1, len(panels), figsize=(4.2 * len(panels), 3.8))
    long = grid_long(summary, [p[1] for p in panels])
    for ax, (bench, metric, title) in zip(axes, panels, strict=True):
        data = long[(long["benchmark"] == bench) & (long["metric"] == metric)]
        if data.empty:
            ax.set(title=f"{title} (no data)")
            continue
        _interval_bars(ax, data, title, metric.replace("_", " ") + " (95% CI)")
    footnote(fig, grid_n(summary, ("repair", "execution")))
    return fig


def plot_delegation(summary: pd.DataFrame):
    import matplotlib.pyplot as plt

    repair = summary[summary["benchmark"] == "repair"]
    long = grid_long(repair, ["main_agent_tokens", "main_agent_turns", "direct_terminal_calls", "subagent_calls"])
    fig, axes = plt.subplots(1, 4, figsize=(17, 3.8))
    for ax, metric in zip(
        axes, ["main_agent_tokens", "main_agent_turns", "direct_terminal_calls", "subagent_calls"], strict=True
    ):
        data = long[long["metric"] == metric]
        if not data.empty:
            _interval_bars(ax, data, metric.replace("_", " "), "per episode (95% CI)")
    footnote(fig, grid_n(summary, ("repair",)))
    return fig


def token_savings(summary: pd.DataFrame) -> pd.DataFrame:
    """Per subagent: main-agent tokens relative to No-Subagent, resolve rates side by side."""
    repair = summary[summary["benchmark"] == "repair"].set_index("subagent")
    if "none" not in repair.index:
        return pd.DataFrame()
    base = repair.loc["none"]
    rows = []
    for sub, r in repair.iterrows():
        rows.append(
            {
                "subagent": sub,
                "token_ratio": round(r["main_agent_tokens"] / base["main_agent_tokens"], 3),
                "resolve_rate": r["resolve_rate"],
                "resolve_rate_no_subagent": base["resolve_rate"],
                "direct_terminal_calls": r["direct_terminal_calls"],
                "subagent_calls": r["subagent_calls"],
            }
        )
    return pd.DataFrame(rows)


# -- case study ---------------------------------------------------------------------------------------------
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
    import matplotlib.pyplot as plt

    table = case_study_table(case).drop(index="resolved").astype(float)
    fig, axes = plt.subplots(1, len(table), figsize=(4 * len(table), 3.5))
    for ax, (metric, row) in zip(axes, table.iterrows(), strict=True):
        ax.bar(["without", "with"], row.values, color=["C7", "C0"])
        ax.set(title=metric.replace("_", " "))
    fig.suptitle(f"Case study: {case['task_id']} (main agent {case['main_agent']}, subagent {case['subagent']})")
    calls = len(case["with_subagent"].get("calls", []))
    footnote(fig, f"n = 1 task, one episode without the subagent and one with it ({calls} subagent calls); one seed")
    return fig
