"""The training notebook's figures: the smoke run's SFT loss, GRPO reward and held-out rates (`plot_training`), and
the learning runs over seeds (`make learning`: `load_learning`, `learning_table`, `plot_learning`). Base, SFT and
GRPO keep their colours of every other figure (`palette.model_colour`), curves and bars alike."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from terminus.analysis.notebook import footnote, panels
from terminus.analysis.palette import bars, legend, model_colour, model_palette
from terminus.io import read_jsonl
from terminus.stats import mean_interval

STAGES = ("base", "sft", "grpo")


def plot_training(sft: pd.DataFrame, grpo: pd.DataFrame, summary: dict):
    fig, axes = panels(3)
    loss = sft.dropna(subset=["loss"]) if "loss" in sft else sft.iloc[0:0]
    axes[0].plot(loss["step"], loss["loss"], color=model_colour("sft"), label="train loss")
    if "eval_loss" in sft:
        ev = sft.dropna(subset=["eval_loss"])
        axes[0].plot(ev["step"], ev["eval_loss"], "o--", color=model_colour("sft"), label="validation loss")
    axes[0].set(title="SFT", xlabel="step", ylabel="loss")
    axes[0].legend()
    rw = grpo.dropna(subset=["reward"]) if "reward" in grpo else grpo.iloc[0:0]
    axes[1].plot(rw["step"], rw["reward"], "o-", color=model_colour("grpo"), label="mean reward")
    if "reward_std" in rw:
        axes[1].fill_between(
            rw["step"],
            rw["reward"] - rw["reward_std"],
            rw["reward"] + rw["reward_std"],
            color=model_colour("grpo"),
            alpha=0.2,
            label="± spread within groups",
        )
    axes[1].set(title="GRPO", xlabel="step", ylabel="reward (Scorer)")
    axes[1].legend()
    metrics = ("final_answer_rate", "usable_answer_rate", "fact_recall")  # usable beside every final-answer rate
    for i, stage in enumerate(STAGES):  # a model the summary lacks still has its slot, marked n/a
        values = [summary.get(stage, {}).get(k) for k in metrics]
        x = [j + (i - 1) * 0.27 for j in range(len(metrics))]
        bars(axes[2], x, values, colours=[model_colour(stage)] * len(metrics), width=0.27)
    axes[2].set_xticks(range(len(metrics)), [m.replace("_", " ") for m in metrics])
    legend(axes[2], model_palette(STAGES))
    axes[2].set(title="Held-out tasks", ylabel="", xlabel="", ylim=(0, 1))
    held_out = {summary[m].get("n") for m in STAGES if m in summary} - {None}
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
        return pd.DataFrame(read_jsonl(path))

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
    # the usable-answer rate beside the final-answer rate (issue 45), where every seed's summary has it
    usable = all("usable_answer_rate" in r["summary"][s] for r in runs.values() for s in ("base", "sft", "grpo"))
    keys = (
        ("final_answer_rate", "usable_answer_rate", "fact_recall") if usable else ("final_answer_rate", "fact_recall")
    )
    for stage in ("base", "sft", "grpo"):
        for key in keys:
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
        # before is the SFT model GRPO starts from, after is GRPO's: each dot in its model's colour
        ax.plot([i - 0.15, i + 0.15], [r["before"], r["after"]], "-", color="#888", alpha=0.6)
        ax.scatter([i - 0.15], [r["before"]], color=model_colour("sft"), zorder=3, label="before (SFT)" * (i == 0))
        ax.scatter([i + 0.15], [r["after"]], color=model_colour("grpo"), zorder=3, label="after (GRPO)" * (i == 0))
        low, high = r["ci95"]
        ax.errorbar(i + 0.3, r["diff"], yerr=[[r["diff"] - low], [high - r["diff"]]], fmt="s", color="black",
                    capsize=5, label="diff (95% CI)" * (i == 0))  # fmt: skip
    ax.axhline(0, color="k", lw=0.8)
    ax.set_xticks(range(len(seeds)), [f"seed {s}" for s in seeds])
    n = {(r["tasks"], r["samples_per_task"]) for r in reports.values()}
    ax.set(title="GRPO on its tasks: before -> after", ylabel="reward")
    ax.legend(fontsize=9)
    ax.set_xlabel(", ".join(f"{t} tasks x {k} samples" for t, k in sorted(n)))


def plot_learning(runs: dict[int, dict]):
    """Each seed's SFT loss and GRPO reward with the spread over seeds, and held-out recall with intervals."""
    measured = {seed: run["before_after"] for seed, run in runs.items() if run.get("before_after")}
    fig, axes = panels(4 if measured else 3)  # 2 x 2: four panels in a row were unreadable inline
    for col, (stage, metric, title) in enumerate((("sft", "loss", "SFT loss"), ("grpo", "reward", "GRPO reward"))):
        curves = []
        for seed, run in runs.items():
            data = run[stage].dropna(subset=[metric]) if metric in run[stage] else run[stage].iloc[0:0]
            style = ("-", "--", ":", "-.")[len(curves) % 4]  # seeds by line style: colour is the model's
            axes[col].plot(data["step"], data[metric], style, color=model_colour(stage), alpha=0.6,
                           label=f"seed {seed}")  # fmt: skip
            curves.append(data.set_index("step")[metric])
        if curves:
            both = pd.concat(curves, axis=1)
            axes[col].plot(both.index, both.mean(axis=1), "k-", label="mean")
            axes[col].fill_between(both.index, both.min(axis=1), both.max(axis=1), color="k", alpha=0.1,
                                   label="spread over seeds")  # fmt: skip
        axes[col].set(title=title, xlabel="step", ylabel=metric)
        axes[col].legend(fontsize=9)
    table = learning_table(runs)
    recall = table[table["metric"] == "fact_recall"]
    ci = recall["ci95"].fillna(0)
    bars(axes[2], range(len(recall)), recall["mean"], colours=[model_colour(m) for m in recall["model"]],
         errors=(ci, ci))  # fmt: skip
    axes[2].set_xticks(range(len(recall)), recall["model"])
    for i, (_, row) in enumerate(recall.iterrows()):
        seeds = [row[c] for c in row.index if c.startswith("seed ")]
        axes[2].scatter([i] * len(seeds), seeds, color="k", s=12, zorder=3)
    axes[2].set(title="Held-out fact recall\n(95% CI over seeds)", ylim=(0, 1), ylabel="fact recall")
    if measured:
        plot_before_after(axes[3], measured)
    held_out = sorted({r["summary"]["sft"].get("n") for r in runs.values()} - {None})
    footnote(
        fig,
        f"n = {len(runs)} seeds ({', '.join(map(str, runs))}), each a whole run; held-out: "
        f"{', '.join(map(str, held_out))} episodes per model and seed (one per task)",
    )
    return fig
