"""scripts/check_results.py on a throwaway git repository: every result file needs a clean stamp whose commit HEAD
descends from, and the check writes nothing."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "scripts" / "check_results.py"


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=True)
    return done.stdout.strip()


def commit_all(repo: Path, message: str) -> str:
    git(repo, "add", "-A")
    git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", message)
    return git(repo, "rev-parse", "--short=12", "HEAD")


@pytest.fixture
def repo(tmp_path) -> tuple[Path, str]:
    """A repository whose results are stamped with its first commit, committed on top of it."""
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q")
    (repo / "code.py").write_text("x = 1\n")
    first = commit_all(repo, "code")
    cached, bench = repo / "results" / "cached", repo / "results" / "benchmarks"
    (cached / "eval").mkdir(parents=True)
    bench.mkdir(parents=True)
    (cached / "stamp.json").write_text(json.dumps({"commit": first, "dirty": False, "machine": {"cpu": "x"}}))
    (cached / "tasks.stats.json").write_text(json.dumps({"tasks": 3, "git_commit": first}))
    (cached / "eval" / "records.jsonl").write_text(
        "".join(json.dumps({"i": i, "git_commit": first}) + "\n" for i in (1, 2))
    )
    (cached / "eval" / "summary.csv").write_text(f"arm,rate,git_commit\nsft,0.5,{first}\nnone,0.1,{first}\n")
    (bench / "speed.json").write_text(json.dumps({"per_s": 3.0, "stamp": {"commit": first, "dirty": False}}))
    (bench / "rows.json").write_text(json.dumps([1, 2]))
    (bench / "rows.json.stamp.json").write_text(json.dumps({"commit": first, "dirty": False}))
    (bench / "times.csv").write_text(f"what,s,commit\na,1.0,{first}\n")
    commit_all(repo, "results")
    return repo, first


def check(repo: Path, *folders: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(SCRIPT), "--root", str(repo), *folders], capture_output=True, text=True, check=False
    )


def test_clean_stamps_at_an_ancestor_pass_in_every_form(repo):
    repo, _ = repo
    done = check(repo)
    assert done.returncode == 0, done.stdout
    assert "8 result files stamped clean" in done.stdout


def test_a_file_without_a_stamp_fails_naming_it(repo):
    repo, _ = repo
    (repo / "results" / "benchmarks" / "rows.json.stamp.json").unlink()
    (repo / "results" / "cached" / "learning.json").write_text(json.dumps({"recall": 0.1}))
    (repo / "results" / "cached" / "eval" / "summary.csv").write_text("arm,rate\nsft,0.5\n")
    done = check(repo)
    assert done.returncode == 1
    failing = {line.split(":")[0] for line in done.stdout.splitlines() if line.startswith("results/")}
    assert failing == {
        "results/benchmarks/rows.json",
        "results/cached/learning.json",
        "results/cached/eval/summary.csv",
    }
    assert "3 of 8 result files fail" in done.stdout


def test_a_dirty_stamp_fails(repo):
    repo, first = repo
    bench = repo / "results" / "benchmarks"
    (bench / "speed.json").write_text(json.dumps({"per_s": 3.0, "stamp": {"commit": first, "dirty": True}}))
    (repo / "results" / "cached" / "tasks.stats.json").write_text(json.dumps({"git_commit": f"{first}-dirty"}))
    done = check(repo)
    assert done.returncode == 1
    assert f"results/benchmarks/speed.json: dirty stamp (commit {first}-dirty" in done.stdout
    assert "results/cached/tasks.stats.json: dirty stamp" in done.stdout


def test_a_commit_head_does_not_descend_from_fails(repo):
    repo, first = repo
    git(repo, "checkout", "-q", "-b", "side")
    (repo / "code.py").write_text("x = 2\n")
    side = commit_all(repo, "a commit main never gets")
    git(repo, "checkout", "-q", "-")
    cached = repo / "results" / "cached"
    (cached / "eval" / "summary.csv").write_text(f"arm,rate,git_commit\nsft,0.5,{side}\n")
    (cached / "tasks.stats.json").write_text(json.dumps({"git_commit": "0123456789ab"}))
    (cached / "eval" / "records.jsonl").write_text(
        json.dumps({"git_commit": first}) + "\n" + json.dumps({"git_commit": side}) + "\n"
    )
    done = check(repo, "results/cached")
    assert done.returncode == 1
    assert f"results/cached/eval/summary.csv: commit {side} is not an ancestor of HEAD" in done.stdout
    assert "results/cached/tasks.stats.json: commit 0123456789ab is not in this repository" in done.stdout
    assert "results/cached/eval/records.jsonl: no stamp (its rows name 2 commits" in done.stdout


def test_the_check_writes_nothing(repo):
    repo, _ = repo
    (repo / "results" / "cached" / "learning.json").write_text("{}")
    before = {p: p.stat().st_mtime_ns for p in repo.rglob("*") if ".git" not in p.parts}
    assert check(repo).returncode == 1
    assert {p: p.stat().st_mtime_ns for p in repo.rglob("*") if ".git" not in p.parts} == before
    assert git(repo, "status", "--porcelain") == "?? results/cached/learning.json"


def test_the_ledger_excuses_only_what_it_lists_and_only_shrinks(repo):
    """`--ledger` (what CI runs): a listed unstamped file is reported, not failed; an unlisted one still fails; an
    entry for a file that now passes, or for no file, fails, so that the ledger can only shrink."""
    repo, first = repo
    bench = repo / "results" / "benchmarks"
    (bench / "old.json").write_text(json.dumps({"recall": 0.1}))
    ledger = repo / "results" / "stale.txt"
    ledger.write_text("# known stale\nresults/benchmarks/old.json  # predates stamps\n")
    done = subprocess.run([sys.executable, str(SCRIPT), "--root", str(repo), "--ledger", str(ledger)],
                          capture_output=True, text=True)  # fmt: skip
    assert done.returncode == 0, done.stdout
    assert "results/benchmarks/old.json: known stale, in the ledger (predates stamps)" in done.stdout
    assert "8 of 9 result files stamped clean" in done.stdout and "1 known stale" in done.stdout
    (bench / "new.json").write_text(json.dumps({"recall": 0.2}))  # a new result without a stamp
    done = subprocess.run([sys.executable, str(SCRIPT), "--root", str(repo), "--ledger", str(ledger)],
                          capture_output=True, text=True)  # fmt: skip
    assert done.returncode == 1 and "results/benchmarks/new.json: no stamp" in done.stdout
    (bench / "new.json").unlink()
    (bench / "old.json").write_text(json.dumps({"recall": 0.1, "stamp": {"commit": first, "dirty": False}}))
    ledger.write_text("results/benchmarks/old.json  # predates stamps\nresults/benchmarks/gone.json  # gone\n")
    done = subprocess.run([sys.executable, str(SCRIPT), "--root", str(repo), "--ledger", str(ledger)],
                          capture_output=True, text=True)  # fmt: skip
    assert done.returncode == 1
    assert "results/benchmarks/old.json: in the ledger but its stamp now passes" in done.stdout
    assert "results/benchmarks/gone.json: in the ledger but no such result file" in done.stdout


def test_a_section_with_its_own_stamp_is_checked_too(repo):
    """learning.json's controls carry their own stamp beside the file's: a dirty one fails as file#section."""
    repo, first = repo
    data = {"stamp": {"commit": first, "dirty": False}, "copy_control": {"per_seed": [],
            "stamp": {"commit": first, "dirty": True}}}  # fmt: skip
    (repo / "results" / "benchmarks" / "learning.json").write_text(json.dumps(data))
    done = check(repo)
    assert done.returncode == 1
    assert f"results/benchmarks/learning.json#copy_control: dirty stamp (commit {first}-dirty" in done.stdout
