"""`terminus swe tasks` puts a local row's tests in place inside a sandbox (the default backend, no flag given):
the row's setup commands never run on the host, and no file is staged in the host's shared temp folder."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from builders import TERMINUS
from terminus.sandbox.bwrap import bwrap_path

needs_bwrap = pytest.mark.skipif(bwrap_path() is None, reason="the default backend is local without bubblewrap")


def _tasks(tmp_path: Path, dataset: Path, tmpdir: Path) -> subprocess.CompletedProcess:
    """`terminus swe tasks` in a process of its own, with `tmpdir` as its TMPDIR."""
    env = {**os.environ, "TMPDIR": str(tmpdir)}
    out = tmp_path / "corpus" / "tasks.jsonl"
    command = [TERMINUS, "swe", "tasks", "--dataset", str(dataset), "--out", str(out)]
    return subprocess.run(command, env=env, capture_output=True, text=True, timeout=300, cwd=tmp_path)


def _pro_row(swe_data, tmp_path: Path, extra: str) -> Path:
    """The SWE-Bench Pro row, its setup (the last line of before_repo_set_cmd, which checks the test file out of
    the fix commit) followed by `extra`."""
    root, _ = swe_data
    row = json.loads((root / "pro.jsonl").read_text().splitlines()[0])
    row["repo_path"] = str(root / row["repo_path"])
    lines = row["before_repo_set_cmd"].splitlines()
    row["before_repo_set_cmd"] = "\n".join([*lines[:-1], f"{lines[-1]} && {extra}"])
    dataset = tmp_path / "pro.jsonl"
    dataset.write_text(json.dumps(row) + "\n")
    return dataset


@needs_bwrap
def test_a_rows_setup_commands_do_not_run_on_the_host(swe_data, tmp_path):
    """The setup writes a marker to a host path outside the workspace: the path stays absent, and the Pro row,
    whose setup reads the fix commit, still gives its tasks with the test file in place."""
    marker = tmp_path / "host" / "marker"
    marker.parent.mkdir()
    dataset = _pro_row(swe_data, tmp_path, f"{{ echo pwned > {marker} || true; }}")
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    done = _tasks(tmp_path, dataset, tmpdir)
    assert done.returncode == 0, done.stderr
    assert not marker.exists()
    records = [json.loads(line) for line in (tmp_path / "corpus" / "tasks.jsonl").read_text().splitlines()]
    snap = tmp_path / "corpus" / records[0]["workspace"]
    assert "TestParseSizeLowercase" in (snap / "size_test.go").read_text()  # from the fix commit
    assert "1000 * 1000" not in (snap / "size.go").read_text()  # the bug is still there
    log = subprocess.run(["git", "log", "--all", "--format=%H"], cwd=snap, capture_output=True, text=True)
    assert len(log.stdout.split()) == 1  # the base commit alone: no fix to read


@needs_bwrap
def test_the_test_patch_is_not_staged_at_a_fixed_host_path(swe_data, tmp_path):
    """A link planted at the old staging path `$TMPDIR/terminus-test.diff` is not written through, and nothing is
    left in the temp folder."""
    root, _ = swe_data
    row = json.loads((root / "verified.jsonl").read_text().splitlines()[0])
    row["repo_path"] = str(root / row["repo_path"])
    dataset = tmp_path / "verified.jsonl"
    dataset.write_text(json.dumps(row) + "\n")
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    target = tmp_path / "host-file.txt"
    target.write_text("the host's own\n")
    (tmpdir / "terminus-test.diff").symlink_to(target)
    done = _tasks(tmp_path, dataset, tmpdir)
    assert done.returncode == 0, done.stderr
    assert target.read_text() == "the host's own\n"
    assert [p.name for p in tmpdir.iterdir()] == ["terminus-test.diff"]  # the planted link alone
    assert os.readlink(tmpdir / "terminus-test.diff") == str(target)
    records = [json.loads(line) for line in (tmp_path / "corpus" / "tasks.jsonl").read_text().splitlines()]
    snap = tmp_path / "corpus" / records[0]["workspace"]
    assert "test_discount_rounds_half_up" in (snap / "tests" / "test_money.py").read_text()  # the test patch
