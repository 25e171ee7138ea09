"""Execute every notebook headless (papermill) on a results folder; figures go to results/figures-<name>/.

python scripts/run_notebooks.py results/cached
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import papermill

ROOT = Path(__file__).resolve().parents[1]


def main(results: str) -> None:
    figures = ROOT / "results" / f"figures-{Path(results).name}"
    with tempfile.TemporaryDirectory() as tmp:
        for notebook in sorted((ROOT / "notebooks").glob("*.ipynb")):
            papermill.execute_notebook(
                str(notebook),
                str(Path(tmp) / notebook.name),
                parameters={"results": str(Path(results).resolve()), "figures": str(figures)},
                cwd=str(ROOT),
                progress_bar=False,
                kernel_name="python3",
            )
            print(f"{notebook.name}: ok")
    print(f"figures in {figures}: {sorted(p.name for p in figures.glob('*.png'))}")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "results/cached")
