"""The committed tables belong to the committed code: a fresh smoke run's tables against results/cached/, field by
field under the rule its origin allows (`terminus.drift`): exact where no float decides (task sets, episodes of an
untrained subagent, counts, every episode's outcome), SFT's curve within a stated tolerance, a trained model's
generations by overlapping 95% intervals; wall clock and stamps aside. On the machine that made the cache (equal
`machine` stamps) every rule is exact. Prints both machines, and for each table the rule each field met. Run by CI
right after `make demo`; exits 1 naming every differing table (refresh the cache with `make cache-results` when a
change to the tables is meant).

    python scripts/compare_cached.py [results/smoke] [results/cached] [--rules auto|exact|tolerant]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from terminus.analysis.notebook import FILES  # noqa: E402
from terminus.drift import compare  # noqa: E402


def machine_line(machine: dict | None) -> str:
    if not machine:
        return "not stamped"
    return json.dumps(machine, sort_keys=True)


def report(result: dict, run: Path, cached: Path, verbose: bool = True) -> int:
    """Print the machines, each table's outcome and rules; the exit status (1 when any table differs)."""
    ours, theirs = result["machines"]
    if ours == theirs and ours:
        print(f"machine (run and cache): {machine_line(ours)}")
    else:
        print(f"machine of the run:   {machine_line(ours)}\nmachine of the cache: {machine_line(theirs)}")
    rules = "exact everywhere: the same machine" if result["exact"] else "the tolerant rules: another machine, or one"
    print(f"rules: {rules}" + ("" if result["exact"] else " not stamped (terminus.drift)"))
    differing = [v for v in result["verdicts"] if v.problems]
    for v in result["verdicts"]:
        print(f"{v.path}: {'DIFFERS' if v.problems else 'same'}")
        for problem in v.problems[:12]:
            print(f"    {problem}")
        if len(v.problems) > 12:
            print(f"    ... and {len(v.problems) - 12} more")
        for label, names in v.rules.items() if verbose else ():
            shown = ", ".join(names[:14]) + (f" (+{len(names) - 14} more)" if len(names) > 14 else "")
            print(f"    {label}: {shown}")
    total = len(result["verdicts"])
    if not differing:
        print(f"{total} tables of {run} match {cached} under these rules")
        return 0
    print(f"{len(differing)} of {total} tables of {run} differ from {cached}: {', '.join(v.path for v in differing)}")
    print("A change to the tables that is meant: refresh them (make cache-results) in the same commit.")
    return 1


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("run", nargs="?", type=Path, default=ROOT / "results" / "smoke", help="The fresh run's folder.")
    ap.add_argument("cached", nargs="?", type=Path, default=ROOT / "results" / "cached", help="The committed tables.")
    ap.add_argument(
        "--rules",
        choices=("auto", "exact", "tolerant"),
        default="auto",
        help="auto (default): exact when both folders' machine stamps are equal, else the tolerant rules.",
    )
    args = ap.parse_args(argv)
    for folder in (args.run, args.cached):
        if not folder.is_dir():
            print(f"error: {folder} is not a folder", file=sys.stderr)
            return 2
    result = compare(args.run, args.cached, sorted(FILES.values()), args.rules)
    return report(result, args.run, args.cached)


if __name__ == "__main__":
    sys.exit(main())
