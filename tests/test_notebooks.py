"""The notebooks as a researcher sees them: every figure inline in the executed notebook and written as a file, the
executed notebooks kept (`make notebooks`), relative results paths taken against the notebook's repository, nothing
written into the committed results/cached/, `make lab` usable as root and at the repository root with its kernelspec
in the venv, papermill's parameters declared, zero drawn apart from missing, and multi-panel figures as wide as Lab
shows them (issue 44)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from terminus.analysis import delegation, evaluation, training
from terminus.analysis import notebook as nb  # `notebook` names the notebooks in the tests below
from terminus.config import ROOT

FIGURES = {"corpus", "training", "learning", "evaluation", "delegation", "case_study"}
FIGURES |= {"arms_pareto", "arms_cost_ratios", "arms_routing"}  # the evaluation notebook's arms (issue 42)
CACHED = ROOT / "results" / "cached"
needs_cache = pytest.mark.skipif(not (CACHED / "eval/summary.csv").is_file(), reason="results/cached/ is empty")


def snapshot(folder: Path) -> dict[str, tuple[int, int]]:
    return {str(p.relative_to(folder)): (p.stat().st_size, p.stat().st_mtime_ns) for p in folder.rglob("*")}


def images(notebook: Path) -> list[str]:
    """The image/png outputs of an executed notebook, in cell order."""
    cells = json.loads(notebook.read_text())["cells"]
    return [o["data"]["image/png"] for c in cells for o in c.get("outputs", []) if "image/png" in o.get("data", {})]


@needs_cache
def test_make_notebooks_keeps_executed_notebooks_with_inline_figures(tmp_path):
    before = snapshot(CACHED)
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        import run_notebooks
    finally:
        sys.path.remove(str(ROOT / "scripts"))
    out, figures = run_notebooks.run(Path("results/cached"), tmp_path / "executed", tmp_path / "figures")
    assert {p.stem for p in figures.glob("*.png")} == FIGURES
    for notebook in sorted((ROOT / "notebooks").glob("*.ipynb")):
        executed = out / notebook.name
        shown = images(executed)
        # training shows the smoke run's curves and the learning runs'; evaluation the grid and the arms' three
        wanted = {"training": 2, "evaluation": 4}.get(notebook.stem, 1)
        assert len(shown) == wanted, f"{notebook.name} shows {len(shown)} figures inline"
        last = json.loads(executed.read_text())["cells"][-1]
        assert any("image/png" in o.get("data", {}) for o in last["outputs"]), "the last cell shows the figure"
        assert not any(o.get("output_type") == "execute_result" for o in last["outputs"]), "not a path"
    assert snapshot(CACHED) == before, "results/cached/ (committed) was written to"


def test_make_notebooks_target_writes_into_the_tree():
    done = subprocess.run(["make", "-n", "notebooks"], cwd=ROOT, capture_output=True, text=True, check=True)
    assert "scripts/run_notebooks.py results/cached" in done.stdout
    assert "results/notebooks-" in (ROOT / "scripts/run_notebooks.py").read_text()
    ignored = subprocess.run(
        ["git", "check-ignore", "results/notebooks-cached/x.ipynb", "results/figures-cached/x.png"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert ignored.stdout.split() == ["results/notebooks-cached/x.ipynb", "results/figures-cached/x.png"]


@needs_cache
def test_a_notebook_opened_outside_make_lab_reads_its_repository_and_writes_nothing_tracked(tmp_path):
    """As Jupyter runs it (working directory: the notebook's folder), with no parameters and no environment: the
    relative `results/cached` is the repository's, and the figure goes to results/figures-cached/."""
    import papermill

    before = snapshot(CACHED)
    figure = ROOT / "results" / "figures-cached" / "corpus.png"
    figure.unlink(missing_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("TERMINUS_")}
    saved = os.environ.copy()
    os.environ.clear()
    os.environ.update(env)
    try:
        papermill.execute_notebook(
            str(ROOT / "notebooks/corpus.ipynb"),
            str(tmp_path / "corpus.ipynb"),
            cwd=str(ROOT / "notebooks"),
            progress_bar=False,
        )
    finally:
        os.environ.clear()
        os.environ.update(saved)
    assert figure.is_file() and images(tmp_path / "corpus.ipynb")
    assert snapshot(CACHED) == before


def test_relative_results_resolve_against_the_notebooks_repository(tmp_path, monkeypatch):
    """Another checkout (not the installed package's): its own results, from its notebooks/ or its root."""
    clone = tmp_path / "clone"
    (clone / "notebooks").mkdir(parents=True)
    (clone / "Snakefile").write_text("")
    (clone / "results" / "cached").mkdir(parents=True)
    (clone / "results" / "smoke").mkdir()
    for cwd in (clone / "notebooks", clone):
        monkeypatch.chdir(cwd)
        results, figures = nb.setup("results/cached")
        assert results == clone / "results" / "cached"
        assert figures == clone / "results" / "figures-cached"  # never inside the committed tables
        results, figures = nb.setup("results/smoke")
        assert (results, figures) == (clone / "results" / "smoke", clone / "results" / "smoke" / "figures")
    with pytest.raises(FileNotFoundError, match="results/nope does not exist"):
        nb.setup("results/nope")


def test_each_figure_says_its_n():
    import pandas as pd

    summary = pd.DataFrame(
        [
            {
                "main_agent": "r",
                "subagent": s,
                "benchmark": b,
                "seed": 0,
                "n": 3,
                "resolve_rate": 1.0,
                "resolve_rate_lo": 1.0,
                "resolve_rate_hi": 1.0,
            }
            for s in ("none", "scripted")
            for b in ("repair",)
        ]
    )
    fig = evaluation.plot_grid(summary)
    texts = [t.get_text() for t in fig.texts]
    assert any(t.startswith("n = repair: 3 tasks per arm, 1 run(s) each") for t in texts), texts


def test_make_lab_allows_root_only_as_root():
    done = subprocess.run(["make", "-n", "lab"], cwd=ROOT, capture_output=True, text=True, check=True)
    lab = [line for line in done.stdout.splitlines() if "jupyter lab " in line]
    assert lab, done.stdout
    # at the repository root (results/ reachable), opened on notebooks/
    assert f"--ServerApp.root_dir={ROOT}" in lab[0] and "--LabApp.default_url=/lab/tree/notebooks" in lab[0]
    (kernel,) = [line for line in done.stdout.splitlines() if "ipykernel install" in line]
    assert "--sys-prefix" in kernel and "--user" not in kernel, "a user-wide kernelspec is shared by every checkout"
    assert ("--allow-root" in lab[0]) == (os.getuid() == 0)
    setpriv = shutil.which("setpriv")
    if os.getuid() == 0 and setpriv:  # the same Makefile as an ordinary user: no --allow-root
        user = subprocess.run(
            [
                setpriv,
                "--reuid=65534",
                "--regid=65534",
                "--clear-groups",
                "make",
                "-n",
                "-f",
                str(ROOT / "Makefile"),
                "lab",
            ],
            cwd=ROOT,
            capture_output=True,
            text=True,
            env={**os.environ, "HOME": "/tmp"},
        )
        if user.returncode == 0:
            assert "jupyter lab " in user.stdout and "--allow-root" not in user.stdout


@pytest.mark.parametrize("notebook", sorted(p.name for p in (ROOT / "notebooks").glob("*.ipynb")))
def test_papermill_finds_the_parameters_it_is_passed(notebook):
    """`make notebooks` passes `results` and `figures`; papermill warned "Passed unknown parameter: results" for every
    notebook while a comment on that line held a second "=" (it skips such lines)."""
    import papermill

    assert {"results", "figures"} <= set(papermill.inspect_notebook(str(ROOT / "notebooks" / notebook)))


def summary_rows(values: dict[str, object], metric: str = "resolve_rate", benchmark: str = "repair"):
    import pandas as pd

    rows = []
    for subagent, value in values.items():
        row = {"main_agent": "r", "subagent": subagent, "benchmark": benchmark, "seed": 0, "n": 3, "runs": 1}
        row |= {metric: value, f"{metric}_lo": value, f"{metric}_hi": value}
        rows.append(row)
    return pd.DataFrame(rows)


def bar_heights(ax) -> dict[str, float]:
    labels = [t.get_text() for t in ax.get_xticklabels()]
    return dict(zip(labels, [p.get_height() for p in ax.patches], strict=True))


def test_a_zero_bar_is_drawn_and_a_missing_one_says_so():
    """A bar of 0 was invisible and a missing value drew nothing: both looked alike. Now a zero bar has a "0" on it
    and a missing value "n/a", on the panel's axis, at its own slot."""
    import matplotlib.pyplot as plt

    fig = evaluation.plot_grid(summary_rows({"none": 0.5, "scripted": 0.0, "sft": ""}))
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["none", "scripted", "sft"]
    marks = {t.get_text(): t.xy[0] for t in ax.texts}
    assert marks == {"0": 1, "n/a": 2}
    zero_line = [line for line in ax.get_lines() if list(line.get_ydata()) == [0, 0]]
    assert len(zero_line) == 1, "the zero bar is drawn as a line at 0"
    plt.close(fig)
    fig = delegation.plot_delegation(summary_rows({"none": 0.0, "scripted": 3.0}, metric="subagent_calls"))
    assert [t.get_text() for t in fig.axes[3].texts] == ["0"]
    plt.close(fig)


def learning_runs(seeds=(0, 1), *, before_after: bool = True) -> dict[int, dict]:
    import pandas as pd

    runs = {}
    for seed in seeds:
        stages = {"base": 0.0, "sft": 0.3 + seed / 10, "grpo": 0.4}
        summary = {m: {"final_answer_rate": v, "fact_recall": v, "n": 20} for m, v in stages.items()}
        report = {"before": 0.2, "after": 0.3, "diff": 0.1, "ci95": [0.0, 0.2], "tasks": 8, "samples_per_task": 8}
        runs[seed] = {
            "summary": summary,
            "sft": pd.DataFrame({"step": [1, 2, 3], "loss": [3.0, 2.0, 1.0]}),
            "grpo": pd.DataFrame({"step": [1, 2, 3], "reward": [0.1, 0.2, 0.3]}),
            "before_after": report if before_after else None,
        }
    return runs


def test_the_learning_figure_is_two_by_two_and_as_wide_as_lab_shows_it():
    """Four panels in a row (20 inches) were shrunk to half their size inline; now 2 x 2 at Lab's width, and no
    text in it smaller than 9 points."""
    import matplotlib.pyplot as plt

    fig = training.plot_learning(learning_runs())
    assert fig.get_size_inches()[0] == nb.INLINE_WIDTH
    corners = sorted((round(ax.get_position().x0, 2), round(ax.get_position().y0, 2)) for ax in fig.axes)
    assert len({x for x, _ in corners}) == 2 and len({y for _, y in corners}) == 2, corners
    sizes = [t.get_fontsize() for ax in fig.axes for t in (ax.title, *ax.texts)]
    sizes += [t.get_fontsize() for ax in fig.axes if ax.get_legend() for t in ax.get_legend().get_texts()]
    assert min(sizes) >= 9, sizes
    plt.close(fig)
    fig = training.plot_learning(learning_runs(before_after=False))  # three panels: the fourth slot stays empty
    assert len([ax for ax in fig.axes if ax.get_visible()]) == 3
    plt.close(fig)
