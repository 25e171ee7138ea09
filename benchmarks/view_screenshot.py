"""The trajectory viewer on the committed tables, as a browser shows it: `terminus view results/cached` into
results/view-cached/, then headless Chromium's screenshot of its index -> results/benchmarks/view.png.

python benchmarks/view_screenshot.py [--results results/cached] [--out results/benchmarks/view.png]
"""

from __future__ import annotations

import argparse
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
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as profile:
        subprocess.run(
            [
                chromium,
                *FLAGS,
                f"--user-data-dir={profile}",
                f"--screenshot={args.out}",
                f"--window-size={args.size}",
                index.resolve().as_uri(),
            ],
            check=True,
            capture_output=True,
            timeout=120,
        )
    print(f"{index} -> {args.out}")


if __name__ == "__main__":
    main()
