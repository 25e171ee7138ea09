"""The trajectory viewer on the committed tables, as a browser shows it: `terminus view results/cached` into
results/view-cached/, then headless Chromium's screenshot -> results/benchmarks/view.png of the case study's
episode with the subagent (eval/case_study.json), its first subagent call expanded (or of the index, where the
results have no case study).

python benchmarks/view_screenshot.py [--results results/cached] [--out results/benchmarks/view.png]
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FLAGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]  # fmt: skip


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--results", type=Path, default=ROOT / "results" / "cached")
    parser.add_argument("--out", type=Path, default=ROOT / "results" / "benchmarks" / "view.png")
    parser.add_argument("--size", default="1200,1400", help="window width,height in pixels")
    args = parser.parse_args(argv)
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        sys.exit("error: chromium is not installed (scripts/sysdeps.sh installs it on Debian)")
    from terminus.view import write_site

    site = ROOT / "results" / f"view-{args.results.resolve().name}"
    index = write_site(args.results, site)
    page = index.resolve().as_uri()
    case = args.results / "eval" / "case_study.json"
    if case.is_file():
        study = json.loads(case.read_text())
        key = "_".join((study["main_agent"], study["subagent"], "repair", "0", study["task_id"]))
        episode = site / "episodes" / f"{key}.html"
        if episode.is_file():
            page = episode.resolve().as_uri() + "#call-1"
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as profile:
        subprocess.run(
            [
                chromium,
                *FLAGS,
                f"--user-data-dir={profile}",
                f"--screenshot={args.out}",
                f"--window-size={args.size}",
                page,
            ],
            check=True,
            capture_output=True,
            timeout=120,
        )
    print(f"{page} -> {args.out}")


if __name__ == "__main__":
    main()
