"""The notebooks as a researcher sees them: every figure inline in the executed notebook and written as a file, the
executed notebooks kept (`make notebooks`), relative results paths taken against the notebook's repository, nothing
written into the committed results/cached/, and `make lab` usable as root."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from terminus.analysis import evaluation
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
    assert any(t.startswith("n = repair: 3 tasks per cell, 1 seed") for t in texts), texts


def test_make_lab_allows_root_only_as_root():
    done = subprocess.run(["make", "-n", "lab"], cwd=ROOT, capture_output=True, text=True, check=True)
    lab = [line for line in done.stdout.splitlines() if "jupyter lab notebooks/" in line]
    assert lab, done.stdout
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
            assert "jupyter lab notebooks/" in user.stdout and "--allow-root" not in user.stdout
