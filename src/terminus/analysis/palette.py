"""The colours of every figure, and bars that tell zero from missing (issue 44).

One colour per model: the subagents (`none`, `scripted`, and the three models base, SFT and GRPO) keep the same
colour in the grid's bars, the training curves, the learning figure and the arms' figures, so that "GRPO" is one
colour wherever a reader meets it. An arm (main agent × subagent × context) takes its subagent's colour, lighter or
darker per context and main agent (`arm_palette`), so that an arm still reads as its subagent.

A bar of value 0 is invisible and a missing value draws nothing: `bars` writes "0" on a zero bar and "n/a" where the
value is missing, so the two never look alike."""

from __future__ import annotations

import math
import zlib

# seaborn's "deep" palette (the notebooks' theme): grey for no subagent (the reference), green for the scripted
# expert, then base, SFT and GRPO; any other name takes one of the rest, fixed by its name alone.
MODEL_COLOURS = {
    "none": "#8c8c8c",
    "scripted": "#55a868",
    "base": "#8172b3",
    "sft": "#4c72b0",
    "grpo": "#dd8452",
}
MODELS = tuple(MODEL_COLOURS)
SPARE = ("#c44e52", "#937860", "#da8bc3", "#ccb974", "#64b5cd")
# what is not a model (the corpus figure: our tasks against the paper's) takes colours no model has
OURS, PAPER = "#2a9d8f", "#bbbbbb"
REFERENCE = "full"  # the context an arm's plain subagent colour goes to first


def model_colour(name: str) -> str:
    """The colour of a subagent or model (case-insensitive), the same in every figure: a name outside `MODELS`
    gets a spare colour chosen from the name alone (crc32), never from the order in which figures met it."""
    key = str(name).lower()
    if key in MODEL_COLOURS:
        return MODEL_COLOURS[key]
    return SPARE[zlib.crc32(key.encode()) % len(SPARE)]


def model_palette(names) -> dict[str, str]:
    """`model_colour` for each name (seaborn's `palette=` for a `hue` of models)."""
    return {name: model_colour(name) for name in names}


def shade(colour: str, amount: float) -> str:
    """The colour mixed towards white (amount > 0) or black (amount < 0), |amount| <= 1."""
    import matplotlib.colors as mcolors

    target = 1.0 if amount > 0 else 0.0
    rgb = [c + (target - c) * abs(amount) for c in mcolors.to_rgb(colour)]
    return mcolors.to_hex(rgb)


def arm_palette(arms) -> dict[str, str]:
    """One colour per arm (`<main>__<subagent>__<context>`), the same in every figure given the same arms: each
    arm in its subagent's colour, the full-context arm of the first main agent plain, the subagent's other arms
    alternately lighter and darker, spread evenly so that no two arms share a colour."""
    by_subagent: dict[str, list[tuple[str, str, str]]] = {}
    for arm in set(arms):
        main, sub, context = arm.split("__", 2)
        by_subagent.setdefault(sub, []).append((main, context, arm))
    palette = {}
    for sub, members in by_subagent.items():
        members.sort(key=lambda m: (m[1] != REFERENCE, m[1], m[0]))
        steps = math.ceil((len(members) - 1) / 2)
        for k, (_, _, arm) in enumerate(members):
            # k = 0 plain; 1, 3, 5 lighter and 2, 4, 6 darker, in equal steps up to 70% of the way
            amount = 0.0 if k == 0 else (1 if k % 2 else -1) * 0.7 * math.ceil(k / 2) / steps
            palette[arm] = shade(model_colour(sub), amount)
    return palette


def order(name: str) -> tuple:
    """Sort key that puts subagents in `MODELS` order (none, scripted, base, SFT, GRPO), other names after."""
    key = str(name).lower()
    return (MODELS.index(key) if key in MODELS else len(MODELS), key)


def legend(ax, colours: dict[str, str], **kwargs) -> None:
    """A legend of coloured patches, one per label (bars drawn by `bars` carry no labels of their own)."""
    from matplotlib.patches import Patch

    ax.legend(handles=[Patch(facecolor=c, label=label) for label, c in colours.items()], **kwargs)


def bars(ax, x, values, *, colours, width: float = 0.8, errors=None, label_missing: str = "n/a"):
    """Bars at `x` with `values`, where a zero and a missing value (None/NaN) stay apart: a zero bar gets a short
    line at 0 in its colour and the label "0"; a missing one the text "n/a" and no bar. `errors` (optional) is
    (lower, upper) distances, drawn as black error bars where the value is present."""
    values = [float("nan") if v is None else float(v) for v in values]
    present = [v == v for v in values]
    heights = [v if ok else 0.0 for v, ok in zip(values, present, strict=True)]
    drawn = ax.bar(x, heights, width=width, color=colours)
    if errors is not None:
        lower, upper = errors
        for xi, v, lo, hi, ok in zip(x, values, lower, upper, present, strict=True):
            if ok and lo == lo and hi == hi:
                ax.errorbar(xi, v, yerr=[[lo], [hi]], fmt="none", ecolor="black", capsize=4)
    for xi, v, ok, colour in zip(x, values, present, list(colours), strict=True):
        if not ok:
            _at_zero(ax, xi, label_missing, "#555")
        elif v == 0:
            ax.plot([xi - width / 2, xi + width / 2], [0, 0], color=colour, lw=3, solid_capstyle="butt", zorder=3)
            _at_zero(ax, xi, "0", "#222")
    return drawn


def _at_zero(ax, x: float, text: str, colour: str) -> None:
    ax.annotate(text, (x, 0), xytext=(0, 3), textcoords="offset points", ha="center", va="bottom", fontsize=10,
                color=colour)  # fmt: skip
