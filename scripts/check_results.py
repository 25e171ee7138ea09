"""Results that belong to the code: every JSON, JSON-lines and CSV file under results/cached/ and results/benchmarks/
carries a stamp whose commit is clean and an ancestor of HEAD (so the committed code made it, or an earlier commit
of this history did). Writes nothing; exits 1 naming each failing file and why.

Where a file's stamp is (results/README.md says the same):
- a JSON object: its `stamp` object (`commit`, `dirty`), else its top-level `git_commit` (how the smoke tables are
  stamped; a `-dirty` suffix means dirty);
- JSON lines: every row's `git_commit` (one commit for all rows);
- CSV: its `commit` or `git_commit` column (one commit for all rows);
- any of these: else a sidecar `<file>.stamp.json` holding `commit` and `dirty` (for a JSON list, or a table that
  cannot hold one).
Stamp files (`stamp.json`, `*.stamp.json`) are checked as stamps themselves.

A JSON object's sections that carry their own `stamp` (learning.json's controls) are checked as well, as
`<file>#<section>`. `--ledger results/stale.txt` (what CI runs) reports the results listed there, known to be
unstamped or stale until their benchmarks are rerun, without failing on them; it fails on every other one, and on an
entry that now passes or names no file, so the ledger only shrinks.

    python scripts/check_results.py [--root REPO] [--ledger FILE] [FOLDER ...]
    (default folders: results/cached results/benchmarks)
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FOLDERS = ("results/cached", "results/benchmarks")
SUFFIXES = (".json", ".jsonl", ".csv")


class NoStamp(Exception):
    """The file holds no stamp it could be checked by (or one that cannot be read)."""


def is_stamp_file(path: Path) -> bool:
    return path.name == "stamp.json" or path.name.endswith(".stamp.json")


def from_stamp(data) -> tuple[str, bool]:
    """(commit, dirty) of a stamp object: `commit` and `dirty`, or a `git_commit` with its `-dirty` suffix."""
    if not isinstance(data, dict):
        raise NoStamp("its stamp is no object")
    commit = data.get("commit") or data.get("git_commit")
    if not isinstance(commit, str) or not commit:
        raise NoStamp("its stamp names no commit")
    return commit.removesuffix("-dirty"), bool(data.get("dirty")) or commit.endswith("-dirty")


def one_commit(values: list[str], what: str) -> tuple[str, bool]:
    """The one commit all rows name in `what`."""
    if not values:
        raise NoStamp("no rows to carry a stamp")
    if "" in values:
        raise NoStamp(f"a row without {what}")
    if len(set(values)) > 1:
        raise NoStamp(f"its rows name {len(set(values))} commits in {what}")
    return from_stamp({"git_commit": values[0]})


def own_stamp(path: Path) -> tuple[str, bool]:
    """(commit, dirty) as the file itself carries them."""
    text = path.read_text(errors="replace")
    try:
        if path.suffix == ".json":
            data = json.loads(text)
            if is_stamp_file(path):
                return from_stamp(data)
            if isinstance(data, dict) and "stamp" in data:
                return from_stamp(data["stamp"])
            if isinstance(data, dict) and "git_commit" in data:
                return from_stamp({"git_commit": data["git_commit"]})
            raise NoStamp("no `stamp` object and no `git_commit`")
        if path.suffix == ".jsonl":
            rows = [json.loads(line) for line in text.splitlines() if line.strip()]
            commits = [str(r.get("git_commit") or "") if isinstance(r, dict) else "" for r in rows]
            return one_commit(commits, "git_commit")
    except json.JSONDecodeError as err:
        raise NoStamp(f"not JSON ({err})") from err
    rows = list(csv.DictReader(io.StringIO(text)))
    column = next((c for c in ("commit", "git_commit") if rows and c in rows[0]), None)
    if column is None:
        raise NoStamp("no `commit` or `git_commit` column")
    return one_commit([r[column] or "" for r in rows], f"its `{column}` column")


def stamp_of(path: Path) -> tuple[str, bool]:
    """The file's own stamp, else its sidecar's."""
    try:
        return own_stamp(path)
    except NoStamp as err:
        sidecar = path.with_name(path.name + ".stamp.json")
        if not sidecar.is_file():
            raise NoStamp(f"no stamp ({err}; no sidecar {sidecar.name})") from err
        try:
            return from_stamp(json.loads(sidecar.read_text()))
        except json.JSONDecodeError as bad:
            raise NoStamp(f"{sidecar.name} is not JSON") from bad


class Ancestry:
    """Whether a commit is HEAD's ancestor in the repository at `root` (asked of git once per commit)."""

    def __init__(self, root: Path):
        self.root = root
        self.known: dict[str, str | None] = {}

    def problem(self, commit: str) -> str | None:
        if commit not in self.known:
            done = subprocess.run(
                ["git", "-C", str(self.root), "merge-base", "--is-ancestor", f"{commit}^{{commit}}", "HEAD"],
                capture_output=True,
                text=True,
            )
            self.known[commit] = (
                None
                if done.returncode == 0
                else f"commit {commit} is not an ancestor of HEAD"
                if done.returncode == 1
                else f"commit {commit} is not in this repository"
            )
        return self.known[commit]


def section_stamps(path: Path) -> dict[str, dict]:
    """The stamps of a JSON object's sections that carry their own (`{"copy_control": {..., "stamp": {...}}}`:
    learning.json's controls, written by another benchmark than its top level)."""
    if path.suffix != ".json" or is_stamp_file(path):
        return {}
    try:
        data = json.loads(path.read_text(errors="replace"))
    except json.JSONDecodeError:
        return {}
    if not isinstance(data, dict):
        return {}
    return {k: v["stamp"] for k, v in data.items() if isinstance(v, dict) and "stamp" in v}


def problem_of(commit: str, dirty: bool, ancestry: Ancestry) -> str | None:
    if dirty:
        return f"dirty stamp (commit {commit}-dirty: made from uncommitted changes)"
    return ancestry.problem(commit)


def check(root: Path, folders: list[str]) -> tuple[list[str], list[str]]:
    """(every file checked, relative to `root`; the failures as 'path: why'), sections with their own stamp
    checked too (as 'path#section: why')."""
    ancestry = Ancestry(root)
    checked, failures = [], []
    for folder in folders:
        for path in sorted(p for p in (root / folder).rglob("*") if p.is_file() and p.suffix in SUFFIXES):
            rel = str(path.relative_to(root))
            checked.append(rel)
            stamps = {
                f"{rel}#{section}": lambda s=stamp: from_stamp(s) for section, stamp in section_stamps(path).items()
            }
            for name, read in [*stamps.items(), (rel, lambda p=path: stamp_of(p))]:
                try:
                    problem = problem_of(*read(), ancestry)
                except NoStamp as err:
                    problem = str(err)
                if problem:
                    failures.append(f"{name}: {problem}")
    return checked, failures


def read_ledger(path: Path) -> dict[str, str]:
    """The ledger of results known to be unstamped or stale: `<file>  # why`, one a line; '#' lines are comments."""
    entries = {}
    for line in path.read_text().splitlines():
        name, _, why = line.partition("#")
        if name.strip():
            entries[name.strip()] = why.strip()
    return entries


def apply_ledger(failures: list[str], ledger: dict[str, str], checked: list[str]) -> tuple[list[str], list[str]]:
    """(failures the ledger does not excuse, the ledger's excused files). The ledger may only shrink: an entry for a
    file that now passes, or that no longer exists, is itself a failure (take it out), so CI fails on any new
    unstamped or stale result and on a ledger that hides nothing."""
    failing = {f.split(": ", 1)[0] for f in failures}
    out = [f for f in failures if f.split(": ", 1)[0] not in ledger]
    for name in ledger:
        if name not in checked and "#" not in name:
            out.append(f"{name}: in the ledger but no such result file (take it out of the ledger)")
        elif name not in failing:
            out.append(f"{name}: in the ledger but its stamp now passes (take it out of the ledger)")
    return out, sorted(n for n in ledger if n in failing)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("folders", nargs="*", default=list(FOLDERS), help="Folders under --root to check.")
    ap.add_argument("--root", type=Path, default=ROOT, help="The repository (default: this checkout).")
    ap.add_argument("--ledger", type=Path, help="Results known to be unstamped or stale (results/stale.txt), "
                    "each reported but not failed; the ledger may only shrink.")  # fmt: skip
    args = ap.parse_args(argv)
    missing = [f for f in args.folders if not (args.root / f).is_dir()]
    if missing:
        print(f"error: not a folder under {args.root}: {', '.join(missing)}", file=sys.stderr)
        return 2
    checked, failures = check(args.root, args.folders)
    excused: list[str] = []
    if args.ledger:
        ledger = read_ledger(args.ledger if args.ledger.is_absolute() else args.root / args.ledger)
        failures, excused = apply_ledger(failures, ledger, checked)
        for name in excused:
            print(f"{name}: known stale, in the ledger ({ledger[name]})")
    for failure in failures:
        print(failure)
    if failures:
        print(f"{len(failures)} of {len(checked)} result files fail their stamp check")
        return 1
    stale = f"; {len(excused)} known stale, in the ledger" if excused else ""
    print(f"{len(checked) - len(excused)} of {len(checked)} result files stamped clean, each at an ancestor of HEAD"
          f"{stale}")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
