"""The evaluation notebook's arm figures on records whose answer is known: the Pareto front, the per-task cost
ratios' median and p90, the difficulty tiers and the routing map's chosen arms; each figure draws, and says what is
missing on records from before the context axis instead of failing."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import pandas as pd
import pytest

from builders import arm_record as rec
from terminus.analysis import arms, arms_plots


def pareto_records() -> pd.DataFrame:
    # (resolve rate in tenths, cost): C is dominated by B (dearer and worse); D is cheap and poor, still on the front
    spec = {
        "m__none__full": (5, 1.0),
        "m__sft__full": (8, 2.0),
        "m__base__full": (7, 3.0),
        "m__none__mask10": (2, 0.5),
    }
    rows = [rec(a, f"t{i}", float(i < k), cost=c, tokens=100) for a, (k, c) in spec.items() for i in range(10)]
    rows += [rec("m__none__full", f"e{i}", None, cost=1.0, benchmark="execution") for i in range(3)]
    return pd.DataFrame(rows)


def test_arm_table_and_pareto_front():
    table = arms.arm_table(pareto_records())
    assert set(table["benchmark"]) == {"repair"}  # execution has no outcome
    rate = dict(zip(table["arm"], table["resolve_rate"], strict=True))
    assert rate == pytest.approx(
        {"m__none__full": 0.5, "m__sft__full": 0.8, "m__base__full": 0.7, "m__none__mask10": 0.2}
    )
    assert (table["resolve_rate_lo"] <= table["resolve_rate"]).all() and (table["n_tasks"] == 10).all()
    assert arms.pareto_front(table) == ["m__none__mask10", "m__none__full", "m__sft__full"]
    twin = pd.concat([table, table[table["arm"] == "m__sft__full"].assign(arm="twin")])
    assert arms.pareto_front(twin) == ["m__none__mask10", "m__none__full", "m__sft__full", "twin"]  # equal: both


def test_cost_ratios_report_median_and_p90_per_task():
    rows = []
    for i in range(10):
        rows.append(rec("m__none__full", f"t{i}", 1.0, cost=2.0))
        rows += [rec("m__grpo__full", f"t{i}", 1.0, cost=0.2 * (i + 1) * f, seed=s) for s, f in ((0, 0.5), (1, 1.5))]
    rows.append(rec("m__none__full", "z", 1.0, cost=0.0))  # no ratio against a zero cost
    rows.append(rec("m__grpo__full", "z", 1.0, cost=1.0))
    ratios = arms.cost_ratios(pd.DataFrame(rows))
    assert set(ratios["arm"]) == {"m__grpo__full"} and len(ratios) == 10
    (summary,) = arms.ratio_summary(ratios).to_dict("records")
    assert summary["n_tasks"] == 10
    assert summary["median"] == pytest.approx(0.55) and summary["p90"] == pytest.approx(0.91)


def test_difficulty_tiers_are_terciles_of_the_reference_tokens():
    rows = [rec("m__none__full", f"t{i}", 1.0, tokens=100 * (6 - i)) for i in range(6)]
    rows += [rec("m__grpo__full", f"t{i}", 1.0, tokens=1) for i in range(6)]  # other arms' tokens do not count
    tiers = arms.difficulty_tiers(pd.DataFrame(rows)).set_index("task_id")["tier"].to_dict()
    assert tiers == {"t5": "light", "t4": "light", "t3": "medium", "t2": "medium", "t1": "heavy", "t0": "heavy"}
    tied = [rec("m__none__full", f"t{i}", 1.0, tokens=50 if i < 4 else 100 * i) for i in range(6)]
    tied_tiers = arms.difficulty_tiers(pd.DataFrame(tied)).set_index("task_id")["tier"]
    assert set(tied_tiers[[f"t{i}" for i in range(4)]]) == {"light"}  # equal spend never splits


def routing_records() -> pd.DataFrame:
    rows = []
    for i in range(600):  # 603 tasks in tiers of 201: 198 + 201 + 201 build tasks (the 3 test tasks are the lightest)
        won, heavy = float(i % 2 == 0), i >= 400
        task = dict(task=f"b{i:03d}", task_type="build", tokens=1000 + i)
        rows.append(rec("m__none__full", task["task"], won, cost=1.0, tokens=task["tokens"], task_type="build"))
        rows.append(rec("m__none__mask10", task["task"], 0.0 if heavy else won, cost=0.5, task_type="build"))
        rows.append(rec("m__grpo__full", task["task"], won, cost=0.7, task_type="build"))
        rows.append(rec("m__base__full", task["task"], 0.0, cost=0.1, task_type="build"))  # cheapest, resolves none
    for i in range(3):
        for arm, cost in (("m__none__full", 1.0), ("m__none__mask10", 0.5), ("m__grpo__full", 0.7)):
            rows.append(rec(arm, f"s{i}", 1.0, cost=cost, tokens=10 + i, task_type="test"))
    return pd.DataFrame(rows)


def test_routing_map_picks_the_cheapest_non_inferior_arm_per_type_and_tier():
    table = arms.routing_table(routing_records(), 0.025)
    chosen = {(r["task_type"], r["tier"]): (r["arm"], r["n_tasks"]) for r in table.to_dict("records")}
    assert chosen == {
        ("build", "light"): ("m__none__mask10", 198),
        ("build", "medium"): ("m__none__mask10", 201),
        ("build", "heavy"): ("m__grpo__full", 201),  # masking loses every heavy task the reference resolves
        ("test", "light"): ("m__none__full", 3),  # three tasks prove nothing: the reference stays
    }
    heavy = table[(table["task_type"] == "build") & (table["tier"] == "heavy")].iloc[0]
    assert heavy["cost_ratio"] == pytest.approx(0.7) and heavy["n_non_inferior"] == 1


def test_figures_draw_with_one_colour_per_arm():
    records = routing_records()
    palette = arms.arm_palette(arms.with_arms(records)["arm"])
    assert len(set(palette.values())) == len(palette) == 4
    assert arms.arm_palette(reversed(list(palette))) == palette
    pareto = arms_plots.plot_pareto(
        pareto_records(), palette=arms.arm_palette(arms.with_arms(pareto_records())["arm"])
    )
    (front,) = [line for line in pareto.axes[0].get_lines() if line.get_label() == "Pareto front"]
    assert list(front.get_xdata()) == pytest.approx([0.5, 1.0, 2.0])
    assert any(t.get_text().startswith("n = repair: 10 tasks, 1 run per arm") for t in pareto.texts)
    ratios = arms_plots.plot_cost_ratios(records, palette=palette)
    labels = [t.get_text() for t in ratios.axes[0].get_yticklabels()]
    assert any(label.startswith("m__none__mask10\nmedian ×0.50, p90 ×0.50") for label in labels)
    routing = arms_plots.plot_routing(records, 0.025, palette=palette)
    colours = {matplotlib.colors.to_hex(p.get_facecolor()) for p in routing.axes[0].patches}
    assert colours == {palette["m__none__mask10"], palette["m__grpo__full"], palette["m__none__full"]}
    for fig in (pareto, ratios, routing):
        plt.close(fig)


@pytest.mark.parametrize("plot", ["plot_pareto", "plot_cost_ratios", "plot_routing"])
def test_old_records_give_a_figure_that_says_what_is_missing(plot):
    old = routing_records().drop(columns=["context", "cost_usd"])
    args = (old, 0.025) if plot == "plot_routing" else (old,)
    fig = getattr(arms_plots, plot)(*args)
    texts = " ".join(t.get_text() for ax in fig.axes for t in ax.texts)
    assert "no context, cost_usd" in texts and "issue 42" in texts
    plt.close(fig)


def test_the_margin_comes_from_the_noninferiority_table(tmp_path, capsys):
    assert arms.noninferiority_table(tmp_path) is None and "issue 42" in capsys.readouterr().out
    assert arms.margin_of(None) == arms.DEFAULT_MARGIN == 0.025
    (tmp_path / "eval").mkdir()
    (tmp_path / arms.NONINFERIORITY).write_text("benchmark,arm,margin\nrepair,a,0.05\n")
    assert arms.margin_of(arms.noninferiority_table(tmp_path)) == 0.05


def test_each_model_has_one_colour_in_every_figure():
    """base, SFT and GRPO had one set of colours in the grid, another in the training figures and a third in the
    arms' figures (issue 44). Now every figure takes `palette.model_colour`: an arm's plain colour is its
    subagent's, its other contexts are shades of it."""
    from terminus.analysis import evaluation, grid, palette, training

    colours = {m: palette.model_colour(m) for m in palette.MODELS}
    assert len(set(colours.values())) == len(colours)
    assert palette.model_colour("GRPO") == colours["grpo"]
    assert palette.model_colour("other") == palette.model_colour("other") not in colours.values()
    arms_ = ["m__grpo__full", "m__grpo__mask10", "m__none__full", "m__none__truncate", "m__none__mask10"]
    shades = palette.arm_palette(arms_)
    assert shades["m__grpo__full"] == colours["grpo"] and shades["m__none__full"] == colours["none"]
    assert len(set(shades.values())) == len(arms_), "every arm its own colour"
    summary = pd.DataFrame(
        [
            {"main_agent": "r", "subagent": s, "benchmark": "repair", "n": 3, "runs": 1, "resolve_rate": 0.5}
            | {"resolve_rate_lo": 0.4, "resolve_rate_hi": 0.6}
            for s in ("grpo", "sft", "none", "base")
        ]
    )
    fig = evaluation.plot_grid(summary)
    drawn = [matplotlib.colors.to_hex(p.get_facecolor()) for p in fig.axes[0].patches]
    assert drawn == [colours[m] for m in ("none", "base", "sft", "grpo")], "in the palette's order"
    plt.close(fig)
    stages = ("base", "sft", "grpo")
    run = {"summary": {m: {"final_answer_rate": 0.5, "fact_recall": 0.5, "n": 4} for m in stages}}
    run |= {"sft": pd.DataFrame({"step": [1], "loss": [1.0]}), "grpo": pd.DataFrame({"step": [1], "reward": [0.1]})}
    for fig in (training.plot_learning({0: run}), training.plot_training(run["sft"], run["grpo"], run["summary"])):
        held_out = {matplotlib.colors.to_hex(p.get_facecolor()) for p in fig.axes[2].patches}
        assert held_out == {colours[m] for m in stages}
        assert fig.axes[1].get_lines()[0].get_color() == colours["grpo"]  # GRPO's reward curve
        plt.close(fig)
    assert not hasattr(grid, "SUBAGENT_ORDER"), "no second, order-dependent palette"
