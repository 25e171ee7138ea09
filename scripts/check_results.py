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

    python scripts/check_results.py [--root REPO] [FOLDER ...]   (default: results/cached results/benchmarks)
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


def check(root: Path, folders: list[str]) -> tuple[list[str], list[str]]:
    """(every file checked, relative to `root`; the failures as 'path: why')."""
    ancestry = Ancestry(root)
    checked, failures = [], []
    for folder in folders:
        for path in sorted(p for p in (root / folder).rglob("*") if p.is_file() and p.suffix in SUFFIXES):
            rel = str(path.relative_to(root))
            checked.append(rel)
            try:
                commit, dirty = stamp_of(path)
            except NoStamp as err:
                failures.append(f"{rel}: {err}")
                continue
            if dirty:
                failures.append(f"{rel}: dirty stamp (commit {commit}-dirty: made from uncommitted changes)")
                continue
            problem = ancestry.problem(commit)
            if problem:
                failures.append(f"{rel}: {problem}")
    return checked, failures


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("folders", nargs="*", default=list(FOLDERS), help="Folders under --root to check.")
    ap.add_argument("--root", type=Path, default=ROOT, help="The repository (default: this checkout).")
    args = ap.parse_args(argv)
    missing = [f for f in args.folders if not (args.root / f).is_dir()]
    if missing:
        print(f"error: not a folder under {args.root}: {', '.join(missing)}", file=sys.stderr)
        return 2
    checked, failures = check(args.root, args.folders)
    for failure in failures:
        print(failure)
    if failures:
        print(f"{len(failures)} of {len(checked)} result files fail their stamp check")
        return 1
    print(f"{len(checked)} result files stamped clean, each at an ancestor of HEAD")
    return 0


if __name__ == "__main__":
    sys.exit(main())
