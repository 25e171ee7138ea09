"""The committed tables belong to the committed code: a fresh smoke run's tables against results/cached/, wall-clock
and the stamps (config hash, git commit, run name) aside. Run by CI right after `make demo`; exits 1 naming every
differing table (refresh the cache with `make cache-results` when a change to the tables is meant).

    python scripts/compare_cached.py [results/smoke] [results/cached]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from terminus.reproducibility import compare_cached  # noqa: E402


def report(result: dict, run: Path, cached: Path) -> int:
    """Print the outcome; the exit status (1 when any table differs)."""
    differing = result["differing"]
    if not differing:
        print(f"{len(result['identical'])} tables of {run} identical to {cached} (stamps and wall clock aside)")
        return 0
    print(f"{len(differing)} of {len(differing) + len(result['identical'])} tables of {run} differ from {cached}:")
    for diff in differing:
        where = f"line {diff['line']}" if diff["line"] else "file"
        print(f"  {diff['path']} ({where})\n    run:    {diff['a'][:200]}\n    cached: {diff['b'][:200]}")
    print("A change to the tables that is meant: refresh them (make cache-results) in the same commit.")
    return 1


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("run", nargs="?", type=Path, default=ROOT / "results" / "smoke", help="The fresh run's folder.")
    ap.add_argument("cached", nargs="?", type=Path, default=ROOT / "results" / "cached", help="The committed tables.")
    args = ap.parse_args(argv)
    for folder in (args.run, args.cached):
        if not folder.is_dir():
            print(f"error: {folder} is not a folder", file=sys.stderr)
            return 2
    return report(compare_cached(args.run, args.cached), args.run, args.cached)


if __name__ == "__main__":
    sys.exit(main())
