"""After a completed smoke run: a rerun with nothing changed does nothing, and editing the judge's rubric reruns
only the stages that depend on it. Run by CI after `make demo`.

    python scripts/check_dag.py
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PROFILE = ["--workflow-profile", "workflow/profiles/local"]
UPSTREAM = {"tasks", "validate_tasks", "collect", "tiny_model"}  # nothing of these reads the rubric


def planned() -> set[str]:
    done = subprocess.run(
        [sys.executable, "-m", "snakemake", *PROFILE, "-n", "--quiet", "rules"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    text = done.stdout + done.stderr
    return set(re.findall(r"^(\w+)\s+\d+\s*$", text, re.M)) - {"total", "job"}


def main() -> None:
    first = planned()
    if first:
        raise SystemExit(f"a rerun with nothing changed would run {sorted(first)}")
    rubric = ROOT / "configs" / "judge" / "rubric.yaml"
    original, stat = rubric.read_bytes(), rubric.stat()
    try:  # an edit, not a touch: Snakemake compares the content of small inputs, not only their times
        rubric.write_bytes(original + b"\n# an edit to the rubric\n")
        after = planned()
    finally:
        rubric.write_bytes(original)
        os.utime(rubric, (stat.st_atime, stat.st_mtime))
    if not after or after & UPSTREAM or "judge_validity" not in after:
        raise SystemExit(f"editing the rubric would run {sorted(after)}")
    print(f"nothing to do on a rerun; editing the rubric reruns {sorted(after)} and not {sorted(UPSTREAM)}")


if __name__ == "__main__":
    main()
