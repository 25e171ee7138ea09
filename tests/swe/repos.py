"""Small git repositories with a real bug, built at test time from tests/data/swe/repos/<name>/ the way the
SWE-bench family stores an instance: `base/` (the tree at the base commit) and patches against it, `gold.patch`
(the fix), `test.patch` (the tests that show the bug) and `partial.patch` (a fix of half the bug). Commits use fixed
identities and dates, so their hashes are the ones the dataset rows in tests/data/swe/ name (`python -m
tests.swe.repos` rewrites the rows)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

DATA = Path(__file__).resolve().parents[1] / "data" / "swe"
GIT_ENV = {
    "GIT_AUTHOR_NAME": "fixture",
    "GIT_AUTHOR_EMAIL": "fixture@example.invalid",
    "GIT_COMMITTER_NAME": "fixture",
    "GIT_COMMITTER_EMAIL": "fixture@example.invalid",
    "GIT_AUTHOR_DATE": "2024-01-01T00:00:00+00:00",
    "GIT_COMMITTER_DATE": "2024-01-01T00:00:00+00:00",
    "GIT_CONFIG_GLOBAL": "/dev/null",
    "GIT_CONFIG_NOSYSTEM": "1",
}


def git(*args: str, cwd: Path) -> str:
    env = {**os.environ, **GIT_ENV}
    return subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True, text=True).stdout


PATCHES = ("gold", "test", "partial")


def build(name: str, dest: Path) -> dict:
    """The repository `name` at `dest`: base commit on `main`, the fix (gold + test patch) on branch `fix`; with
    the commits and the three patches' texts."""
    spec = DATA / "repos" / name
    shutil.copytree(spec / "base", dest)
    git("init", "-q", "-b", "main", cwd=dest)
    git("add", "-A", cwd=dest)
    git("commit", "-q", "-m", f"{name}: base", cwd=dest)
    out = {"base": git("rev-parse", "HEAD", cwd=dest).strip()}
    out |= {kind: (spec / f"{kind}.patch").read_text() for kind in PATCHES}
    git("apply", "--check", str(spec / "partial.patch"), cwd=dest)  # applies at base, as gold and test do below
    git("checkout", "-q", "-b", "fix", cwd=dest)
    git("apply", "--index", str(spec / "gold.patch"), str(spec / "test.patch"), cwd=dest)
    git("commit", "-q", "-m", f"{name}: fix", cwd=dest)
    out["fix"] = git("rev-parse", "HEAD", cwd=dest).strip()
    git("checkout", "-q", "main", cwd=dest)
    return out


LEDGER_F2P = ["tests/test_money.py::test_split_keeps_total", "tests/test_money.py::test_discount_rounds_half_up"]
LEDGER_P2P = [
    "tests/test_money.py::test_add",
    "tests/test_money.py::test_split_even",
    "tests/test_money.py::test_discount_whole",
]
HOST_IMAGE = "terminus-sandbox:host"
SHAPES_F2P = ["tests/test_scale.py::test_scale_mirror", "tests/test_scale.py::test_scale_zero_message"]
SHAPES_P2P = [
    "tests/test_scale.py::test_scale_up",
    "tests/test_scale.py::test_fixture_bytes",
    "tests/test_scale.py::test_check_script_runs",
]


def rows(built: dict[str, dict]) -> dict[str, list[dict]]:
    """The dataset rows of every family, in their published schemas, over the built repositories."""
    ledger, units, slug = built["ledger"], built["units"], built["slugify"]
    verified = {
        "repo": "acme/ledger",
        "instance_id": "acme__ledger-101",
        "base_commit": ledger["base"],
        "patch": ledger["gold"],
        "test_patch": ledger["test"],
        "problem_statement": "split() loses cents: split(1000, 3) gives [333, 333, 333], which adds up to 999. "
        "And apply_discount(999, 15) gives 850; the discount of 149.85 should round to 150.",
        "hints_text": "",
        "created_at": "2024-01-01T00:00:00Z",
        "version": "0.1",
        "FAIL_TO_PASS": json.dumps(LEDGER_F2P),
        "PASS_TO_PASS": json.dumps(LEDGER_P2P),
        "environment_setup_commit": ledger["base"],
        "difficulty": "<15 min fix",
        "repo_path": "git/ledger",
        "test_cmd": "python -m pytest -rA -p no:cacheprovider {test_files}",
        "log_parser": "pytest",
        "image": HOST_IMAGE,
    }
    # Planted broken row: its FAIL_TO_PASS names a test that already passes at the base commit.
    broken = {
        **verified,
        "instance_id": "acme__ledger-102",
        "FAIL_TO_PASS": json.dumps([*LEDGER_F2P, "tests/test_money.py::test_add"]),
        "PASS_TO_PASS": json.dumps(LEDGER_P2P[1:]),
    }
    pro = {
        "repo": "acme/units",
        "instance_id": f"instance_acme__units-{units['fix']}-vnan",
        "base_commit": units["base"],
        "patch": units["gold"],
        "test_patch": units["test"],
        "problem_statement": 'ParseSize("3MB") returns 3000 instead of 3000000, and lowercase units such as '
        '"10kb" are rejected with "no unit".',
        "requirements": "- ParseSize must treat MB as 1000 * 1000 bytes.\n- Units must be case-insensitive.",
        "interface": "No new interfaces are introduced.",
        "repo_language": "go",
        "fail_to_pass": repr(["TestParseSizeMegabytes", "TestParseSizeLowercase"]),
        "pass_to_pass": repr(["TestParseSizeBytes", "TestParseSizeKilobytes"]),
        "issue_specificity": repr(["minor_bug"]),
        "issue_categories": repr(["back_end_knowledge"]),
        "before_repo_set_cmd": f"git reset --hard {units['base']}\ngit clean -fd \ngit checkout {units['base']} \n"
        f"git checkout {units['fix']} -- size_test.go",
        "selected_test_files_to_run": repr(
            ["TestParseSizeMegabytes", "TestParseSizeLowercase", "TestParseSizeBytes", "TestParseSizeKilobytes"]
        ),
        "dockerhub_tag": f"acme.units-acme__units-{units['fix']}-vnan",
        "repo_path": "git/units",
        "test_cmd": "go test -v -run '{test_names_regex}' ./...",
        "log_parser": "gotest",
        "image": HOST_IMAGE,
    }
    rebench = {
        "instance_id": "acme__slugify-lite-7",
        "repo": "acme/slugify-lite",
        "base_commit": slug["base"],
        "patch": slug["gold"],
        "test_patch": slug["test"],
        "problem_statement": "slugify('Hello,  World') gives 'hello---world' and slugify('Hi there!') ends in a "
        "dash; slugs should use single dashes and never start or end with one.",
        "hints_text": "",
        "created_at": "2024-01-01T00:00:00Z",
        "FAIL_TO_PASS": ["collapses runs of separators", "trims separators at the ends"],
        "PASS_TO_PASS": ["lowercases words", "joins words with a dash"],
        "image_name": HOST_IMAGE,
        "install_config": {
            "base_image_name": "node:20-bookworm",
            "install": ["npm install --ignore-scripts"],
            "test_cmd": "node --test test/slug.test.js",
            "log_parser": "node",
        },
        "language": "javascript",
        "meta": {"num_modified_files": 1},
        "repo_path": "git/slugify",
    }
    shapes = built["shapes"]
    # SWE-bench Lite's schema as published (no language, no image): a test patch that renames a test file (with
    # edits), deletes one, makes a script executable and changes a binary data file.
    lite = {
        "repo": "acme/shapes",
        "instance_id": "acme__shapes-3",
        "base_commit": shapes["base"],
        "patch": shapes["gold"],
        "test_patch": shapes["test"],
        "problem_statement": "scale([1, -2], -1) raises 'factor must be positive'; a negative factor should "
        "mirror the values. Only a factor of zero is wrong, and its error should say so.",
        "hints_text": "",
        "created_at": "2024-01-01T00:00:00Z",
        "version": "0.1",
        "FAIL_TO_PASS": json.dumps(SHAPES_F2P),
        "PASS_TO_PASS": json.dumps(SHAPES_P2P),
        "environment_setup_commit": shapes["base"],
        "repo_path": "git/shapes",
        "test_cmd": "python -m pytest -rA -p no:cacheprovider {test_files}",
        "log_parser": "pytest",
    }
    # Its test command cannot start (no such program): exit status 127 and nothing to parse.
    cannot_start = {**lite, "instance_id": "acme__shapes-4", "test_cmd": "no-such-pytest -rA {test_files}"}
    # Its environment imports the unpatched original from outside the workspace, as an environment with the
    # repository pip-installed would: a copy of the base commit's package on PYTHONPATH, and `-P` keeps the
    # working directory off sys.path (as the `pytest` script does).
    installed = {
        **lite,
        "instance_id": "acme__shapes-5",
        "test_cmd": 'mkdir -p "$TMPDIR/site" && git archive HEAD shapes | tar -x -C "$TMPDIR/site" && '
        'PYTHONPATH="$TMPDIR/site" python -P -m pytest -rA -p no:cacheprovider {test_files}',
    }
    return {
        "verified": [verified, broken],
        "pro": [pro],
        "rebench-v2": [rebench],
        "lite": [lite, cannot_start, installed],
    }


def build_all(root: Path) -> dict[str, dict]:
    return {name: build(name, root / "git" / name) for name in ("ledger", "units", "slugify", "shapes")}


if __name__ == "__main__":  # rewrite the committed rows after editing a repository under tests/data/swe/repos
    import tempfile

    with tempfile.TemporaryDirectory() as scratch:
        for family, family_rows in rows(build_all(Path(scratch))).items():
            text = "".join(json.dumps(r, sort_keys=True) + "\n" for r in family_rows)
            (DATA / f"{family}.jsonl").write_text(text)
