"""Execute every notebook headless (papermill) on a results folder, and keep what it shows.

python scripts/run_notebooks.py results/cached

The executed notebooks, figures inline, go to results/notebooks-<name>/ and the figures to results/figures-<name>/
(both ignored by git, never inside the committed results/cached/). Each runs with the notebook's own folder as its
working directory, as in Jupyter.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import papermill

ROOT = Path(__file__).resolve().parents[1]


def run(results: Path, out: Path | None = None, figures: Path | None = None) -> tuple[Path, Path]:
    """Executes every notebook on `results`; returns (executed notebooks folder, figures folder)."""
    results = results if results.is_absolute() else (ROOT / results)
    if not results.is_dir():
        sys.exit(f"error: {results} is not a results folder")
    name = results.resolve().name
    out = out or ROOT / "results" / f"notebooks-{name}"
    figures = figures or ROOT / "results" / f"figures-{name}"
    out.mkdir(parents=True, exist_ok=True)
    for notebook in sorted((ROOT / "notebooks").glob("*.ipynb")):
        papermill.execute_notebook(
            str(notebook),
            str(out / notebook.name),
            parameters={"results": str(results.resolve()), "figures": str(figures.resolve())},
            cwd=str(notebook.parent),
            progress_bar=False,
            kernel_name="python3",
        )
        print(f"{notebook.name}: ok")
    print(f"executed notebooks in {out}: {sorted(p.name for p in out.glob('*.ipynb'))}")
    print(f"figures in {figures}: {sorted(p.name for p in figures.glob('*.png'))}")
    return out, figures


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("results", nargs="?", default="results/cached", help="a results folder (default: %(default)s)")
    parser.add_argument("--out", type=Path, help="executed notebooks (default: results/notebooks-<name>/)")
    parser.add_argument("--figures", type=Path, help="figures (default: results/figures-<name>/)")
    args = parser.parse_args(argv)
    run(Path(args.results), args.out, args.figures)


if __name__ == "__main__":
    main()
