"""What every notebook does around its plots: find the results folder and the figures folder (`setup`), read a
table by its name (`load`, `FILES`), and write and show a figure with its n (`save`, `footnote`). Everything reads a
results folder (a run's `results/<run>/` or the committed `results/cached/`) laid out the same way."""

from __future__ import annotations

import io
import json
import logging
from pathlib import Path

import pandas as pd

from terminus.io import read_jsonl, write_bytes_atomic

log = logging.getLogger(__name__)

FILES = {
    "corpus": "tasks/tasks.stats.json",
    "validation": "tasks/valid.validation.json",
    "sft_metrics": "models/sft/metrics.jsonl",
    "grpo_metrics": "models/grpo/metrics.jsonl",
    "training": "training/summary.json",
    "eval_summary": "eval/summary.csv",
    "noninferiority": "eval/noninferiority.csv",
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
        return pd.DataFrame(read_jsonl(path))
    return json.loads(path.read_text())


INLINE_WIDTH = 10.0  # inches: at `save`'s 120 dpi, about the width of a JupyterLab output area, so nothing shrinks


def panels(n: int, *, cols: int = 2, height: float = 3.8):
    """A figure of n panels, `cols` to a row, as wide as Lab shows a figure inline (`INLINE_WIDTH`): four panels in
    a row were shrunk to half their size and their labels became unreadable. Slots past n are hidden."""
    import matplotlib.pyplot as plt

    cols = max(1, min(cols, n))
    rows = -(-n // cols)
    fig, axes = plt.subplots(rows, cols, figsize=(INLINE_WIDTH, height * rows + 0.4), squeeze=False)
    axes = list(axes.flat)
    for ax in axes[n:]:
        ax.set_visible(False)
    return fig, axes[:n]


def footnote(fig, text: str) -> None:
    """The sample sizes under a figure (tasks, episodes, seeds), so that no figure is read without its n."""
    fig.text(0.01, 0.005, text, ha="left", va="bottom", fontsize=9, color="#444")


def save(fig, figures: Path, name: str) -> None:
    """Write the figure to `<figures>/<name>.png` (atomically) and show it in the notebook, once, as that PNG, with
    the path it was written to. Returns nothing, so that a cell ending on it shows the figure, not a path."""
    import matplotlib.pyplot as plt

    path = Path(figures) / f"{name}.png"
    fig.tight_layout(rect=(0, 0.06, 1, 1))
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=120)
    plt.close(fig)  # the inline backend would show it a second time at the end of the cell
    write_bytes_atomic(path, buffer.getvalue())
    log.info("figure written to %s", path)
    try:
        from IPython import get_ipython
        from IPython.display import Image, Markdown, display
    except ImportError:  # plain Python: the file is the figure
        return
    if get_ipython() is not None:
        display(Image(data=buffer.getvalue(), format="png"))
        display(Markdown(f"written to `{path}`"))
