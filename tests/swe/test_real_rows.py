"""Faults that real SWE-bench rows showed (issue 29), each on a fixture row in the official schema
(tests/data/swe/lite.jsonl, over tests/data/swe/repos/shapes): a test patch that renames, deletes, makes a file
executable and changes a binary file; a test command that cannot start; an environment that imports the repository
from outside the workspace; an environment bwrap cannot see; the language of a row that names none; task
snapshots that held the fix in their history."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from terminus.cli import app
from terminus.sandbox import SandboxSpec, make_sandbox
from terminus.sandbox.bwrap import bwrap_path
from terminus.swe.benchmarks import load_instances
from terminus.swe.environment import instance_sandbox
from terminus.swe.families import infer_language
from terminus.swe.grade import grade_patch, patch_files
from terminus.swe.patchcheck import file_changes, files_after

from .repos import SHAPES_F2P, SHAPES_P2P, git

needs_bwrap = pytest.mark.skipif(bwrap_path() is None, reason="bubblewrap is not installed")
RENAMES, CANNOT_START, INSTALLED = "acme__shapes-3", "acme__shapes-4", "acme__shapes-5"


def _rows(root: Path, ids: list[str], tmp_path: Path, **changes) -> Path:
    """A dataset file of these lite rows (with `changes` applied to each), beside the fixture repositories."""
    rows = [json.loads(line) for line in (root / "lite.jsonl").read_text().splitlines()]
    chosen = [{**r, **changes} for r in rows if r["instance_id"] in ids]
    out = root / f"rows-{tmp_path.name}.jsonl"  # repo_path is relative to the dataset file
    out.write_text("".join(json.dumps(r) + "\n" for r in chosen))
    return out


def _predictions(dataset: Path, tmp_path: Path, kind: str) -> Path:
    rows = [json.loads(line) for line in dataset.read_text().splitlines()]
    path = tmp_path / f"{kind}.jsonl"
    lines = [
        {
            "instance_id": r["instance_id"],
            "model_name_or_path": kind,
            "model_patch": r["patch"] if kind == "gold" else "",
        }
        for r in rows
    ]
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    return path


def _grade(dataset: Path, predictions: Path, out: Path, *extra: str):
    args = ["--dataset", str(dataset), "--predictions", str(predictions), "--sandbox", "bwrap", "--out", str(out)]
    result = CliRunner().invoke(app, ["swe", "grade", *args, *extra])
    assert result.exit_code == 0, result.output
    return json.loads(out.read_text()), result.output


def _validate(dataset: Path, tmp_path: Path, *extra: str) -> tuple[list[dict], dict, str]:
    kept, report = tmp_path / "kept.jsonl", tmp_path / "validation.json"
    args = ["--dataset", str(dataset), "--sandbox", "bwrap", "--out", str(kept), "--report", str(report)]
    result = CliRunner().invoke(app, ["swe", "validate", *args, *extra])
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in kept.read_text().splitlines()]
    return rows, json.loads(report.read_text()), result.output


# -- 1. a test patch that renames, deletes, changes a mode and a binary file ---------------------------------------


def test_patch_files_of_renames_deletions_modes_and_binaries(swe_data):
    _, built = swe_data
    test_patch = built["shapes"]["test"]
    kinds = {(c.old, c.new): c.kind for c in file_changes(test_patch)}
    assert kinds == {
        ("tests/data/expected.pkl", "tests/data/expected.pkl"): "modify",  # GIT binary patch
        ("tests/run_check.py", "tests/run_check.py"): "modify",  # old mode / new mode only
        ("tests/test_legacy.py", None): "delete",
        ("tests/test_old.py", "tests/test_scale.py"): "rename",
    }
    at_base, created = patch_files(test_patch)
    # The setup resets what exists at base (a rename's source, as the official harness does), removes what is new.
    expected = ["tests/data/expected.pkl", "tests/run_check.py", "tests/test_legacy.py", "tests/test_old.py"]
    assert at_base == expected and created == ["tests/test_scale.py"]
    assert files_after(test_patch) == ["tests/data/expected.pkl", "tests/run_check.py", "tests/test_scale.py"]
    # Names with spaces, quoted names and copies.
    other = (
        "diff --git a/t/sp ace.py b/t/sp ace.py\nindex 1..2 100644\n--- a/t/sp ace.py\t\n+++ b/t/sp ace.py\t\n"
        '@@ -1 +1 @@\n-a\n+b\ndiff --git "a/t/caf\\303\\251.py" "b/t/caf\\303\\251.py"\nnew file mode 100644\n'
        '--- /dev/null\n+++ "b/t/caf\\303\\251.py"\n@@ -0,0 +1 @@\n+x\n'
        "diff --git a/t/a.py b/t/b.py\nsimilarity index 100%\ncopy from t/a.py\ncopy to t/b.py\n"
    )
    assert patch_files(other) == (["t/sp ace.py"], ["t/café.py", "t/b.py"])


@needs_bwrap
def test_grade_a_test_patch_that_renames_deletes_and_changes_modes_and_binaries(swe_data, tmp_path):
    root, _ = swe_data
    dataset = _rows(root, [RENAMES], tmp_path)
    (inst,) = load_instances(None, dataset=str(dataset))
    # {test_files}: what the test patch leaves (the rename's target; no deleted file, no data file).
    assert inst.test_cmd.endswith("{test_files}".format(test_files="tests/run_check.py tests/test_scale.py"))
    gold, _ = _grade(dataset, _predictions(dataset, tmp_path, "gold"), tmp_path / "gold.json")
    assert gold[RENAMES] == {
        "resolved": True,
        "fail_to_pass": {"passed": 2, "failed": 0},
        "pass_to_pass": {"passed": 3, "failed": 0},  # the binary and the mode change are in place
        "patch_applied": True,
        "error": None,
    }
    empty, _ = _grade(dataset, _predictions(dataset, tmp_path, "empty"), tmp_path / "empty.json")
    assert empty[RENAMES]["resolved"] is False and empty[RENAMES]["error"] is None
    assert empty[RENAMES]["fail_to_pass"] == {"passed": 0, "failed": 2}
    assert empty[RENAMES]["pass_to_pass"] == {"passed": 3, "failed": 0}


@needs_bwrap
def test_validate_then_tasks_keep_the_renaming_row(swe_data, tmp_path):
    root, built = swe_data
    dataset = _rows(root, [RENAMES], tmp_path)
    kept, report, _ = _validate(dataset, tmp_path)
    assert [r["instance_id"] for r in kept] == [RENAMES], report["reasons"]
    statuses = report["observed"][RENAMES]["before"]["statuses"]
    assert {statuses[t] for t in SHAPES_F2P} == {"FAILED"} and {statuses[t] for t in SHAPES_P2P} == {"PASSED"}
    tasks = tmp_path / "corpus" / "tasks.jsonl"
    result = CliRunner().invoke(app, ["swe", "tasks", "--dataset", str(dataset), "--out", str(tasks)])
    assert result.exit_code == 0, result.output
    record = json.loads(tasks.read_text().splitlines()[0])
    assert record["meta"]["test_files"] == ["tests/data/expected.pkl", "tests/run_check.py", "tests/test_scale.py"]
    snap = tasks.parent / record["workspace"]
    assert (snap / "tests" / "test_scale.py").is_file() and not (snap / "tests" / "test_old.py").exists()
    assert not (snap / "tests" / "test_legacy.py").exists() and os.access(snap / "tests" / "run_check.py", os.X_OK)
    assert (snap / "tests" / "data" / "expected.pkl").read_bytes() == bytes([0, 2, 4, 255])
    assert "factor <= 0" in (snap / "shapes" / "scale.py").read_text()  # the bug is still there
    assert built["shapes"]["base"] in git("log", "--all", "--format=%H", cwd=snap)


def test_tasks_name_a_test_patch_that_does_not_apply_in_one_line(swe_data, tmp_path):
    root, _ = swe_data
    stale = (
        "diff --git a/tests/gone.py b/tests/gone.py\n--- a/tests/gone.py\n+++ b/tests/gone.py\n@@ -1 +1 @@\n-a\n+b\n"
    )
    dataset = _rows(root, [RENAMES], tmp_path, test_patch=stale)
    out = tmp_path / "tasks.jsonl"
    result = CliRunner().invoke(app, ["swe", "tasks", "--dataset", str(dataset), "--out", str(out)])
    assert result.exit_code == 2 and isinstance(result.exception, SystemExit | None), result.exception
    assert f"error: {RENAMES}: putting the tests in place failed" in result.output
    assert "Traceback" not in result.output


# -- 2. a test command that never ran ------------------------------------------------------------------------------


@needs_bwrap
def test_a_test_command_that_cannot_start_is_an_error_not_failures(swe_data, tmp_path):
    root, _ = swe_data
    dataset = _rows(root, [CANNOT_START], tmp_path)
    report, output = _grade(dataset, _predictions(dataset, tmp_path, "gold"), tmp_path / "R.json")
    row = report[CANNOT_START]
    assert row["resolved"] is False and row["patch_applied"] is True
    assert row["error"].startswith("environment: the test command did not start (exit status 127: command not found)")
    assert "no-such-pytest: command not found" in row["error"]  # the log's last lines
    assert "did not start" in output
    kept, validation, output = _validate(dataset, tmp_path)
    assert kept == [] and validation["dropped_by_cause"] == {"environment": 1, "instance": 0}
    reason = validation["reasons"][CANNOT_START]
    assert reason.startswith("environment: with the gold patch: the test command did not start"), reason
    assert "PASS_TO_PASS" not in reason and "1 for the environment" in output


@needs_bwrap
def test_no_test_result_says_why_with_the_log(swe_data, tmp_path):
    """A command that starts but prints nothing a parser reads (here: pytest given a file that does not exist)."""
    root, _ = swe_data
    dataset = _rows(root, [RENAMES], tmp_path, test_cmd="python -m pytest -rA -p no:cacheprovider tests/nothing.py")
    (inst,) = load_instances(None, dataset=str(dataset))
    result = grade_patch(inst, inst.gold_patch, SandboxSpec("bwrap"))
    assert not result.resolved and result.error.startswith("no test result in the log (exit status 4)")
    assert "file or directory not found: tests/nothing.py" in result.error
    _, validation, _ = _validate(dataset, tmp_path)
    assert validation["reasons"][RENAMES].startswith("environment: with the gold patch: no test result in the log")


# -- 3. an environment that imports another copy of the repository -------------------------------------------------


@needs_bwrap
def test_validate_detects_tests_importing_the_repository_from_outside(swe_data, tmp_path):
    root, _ = swe_data
    dataset = _rows(root, [INSTALLED], tmp_path)
    report, output = _grade(dataset, _predictions(dataset, tmp_path, "gold"), tmp_path / "R.json")
    assert report[INSTALLED]["resolved"] is False and report[INSTALLED]["error"] is None
    assert "/tmp/site/shapes/scale.py (= shapes/scale.py) from outside the workspace" in output
    kept, validation, _ = _validate(dataset, tmp_path)
    reason = validation["reasons"][INSTALLED]
    assert kept == [] and reason.startswith("environment: with the gold patch the tests imported the repository")
    assert validation["observed"][INSTALLED]["after"]["outside_workspace"] == [
        "/tmp/site/shapes/scale.py (= shapes/scale.py)"
    ]
    # Every traceback style that names files (long above; short, native, line), in the local backend too.
    (inst,) = load_instances(None, dataset=str(dataset))
    for style in ("short", "native", "line"):
        styled = dataclasses.replace(inst, test_cmd=f"{inst.test_cmd} --tb={style}")
        result = grade_patch(styled, inst.gold_patch, SandboxSpec("local"))
        assert [p.split("/tmp/site/")[-1] for p in result.outside_workspace] == ["shapes/scale.py (= shapes/scale.py)"]
    # The same row whose command imports the workspace (docs/use.md: local rows) grades resolved.
    fixed = _rows(root, [INSTALLED], tmp_path, test_cmd="python -m pytest -rA -p no:cacheprovider {test_files}")
    (inst,) = load_instances(None, dataset=str(fixed))
    assert grade_patch(inst, inst.gold_patch, SandboxSpec("bwrap")).resolved


# -- 4. environments bwrap cannot see ------------------------------------------------------------------------------


def _hidden_python(tmp_path: Path) -> Path:
    """An "environment" under /tmp (where pytest's tmp_path is): a python that runs this interpreter."""
    assert str(tmp_path).startswith(("/tmp/", "/home/")), "this test needs a tmp_path under /tmp or /home"
    env = tmp_path / "env" / "bin"
    env.mkdir(parents=True)
    python = env / "python"
    python.write_text(f'#!/bin/sh\nexec {sys.executable} "$@"\n')
    python.chmod(0o755)
    return python


def _env_binds(python: Path) -> list[str]:
    """What the hidden environment needs bound: its folder, and this interpreter's own environment where bwrap hides
    it too (a checkout and its .venv under /tmp or /home, as CI clones are): the "environment" runs this
    interpreter, so binding only its folder would show a script whose interpreter is still out of view."""
    prefixes = [sys.prefix, str(Path(os.path.realpath(sys.executable)).parent.parent)]
    hidden = [p for p in dict.fromkeys(prefixes) if p.startswith(("/tmp/", "/home/"))]
    return [str(python.parent.parent), *hidden]


@needs_bwrap
def test_bwrap_binds_read_only_host_paths(tmp_path):
    python = _hidden_python(tmp_path)
    with make_sandbox(SandboxSpec("bwrap"), None) as box:
        assert box.run(f"{python} -c 'print(1)'", 30).exit_code == 127  # a private /tmp
    with make_sandbox(SandboxSpec("bwrap", binds=tuple(_env_binds(python))), None) as box:
        assert box.run(f"{python} -c 'print(1)'", 30).output.strip() == "1"
        assert box.run(f"touch {tmp_path}/env/x", 30).exit_code != 0  # read-only
    with pytest.raises(Exception, match="does not exist on this machine"):
        make_sandbox(SandboxSpec("bwrap", binds=(str(tmp_path / "nothing"),)), None)


@needs_bwrap
def test_an_environment_under_tmp_is_named_and_can_be_bound(swe_data, tmp_path):
    root, _ = swe_data
    python = _hidden_python(tmp_path)
    cmd = f"{python} -m pytest -rA -p no:cacheprovider {{test_files}}"
    dataset = _rows(root, [RENAMES], tmp_path, test_cmd=cmd)
    report, _ = _grade(dataset, _predictions(dataset, tmp_path, "gold"), tmp_path / "R.json")
    error = report[RENAMES]["error"]
    assert error.startswith("environment: the test command did not start (exit status 127"), error
    assert f"{python} exists on the host but is not visible in the bwrap sandbox" in error
    # A run names the paths to bind ...
    binds = _env_binds(python)
    flags = [arg for bind in binds for arg in ("--bind", bind)]
    report, _ = _grade(dataset, _predictions(dataset, tmp_path, "gold"), tmp_path / "R.json", *flags)
    assert report[RENAMES]["resolved"] is True, report
    # ... or the row does, in `binds`.
    bound = _rows(root, [RENAMES], tmp_path, test_cmd=cmd, binds=binds)
    (inst,) = load_instances(None, dataset=str(bound))
    assert inst.binds == binds and grade_patch(inst, inst.gold_patch, SandboxSpec("bwrap")).resolved


# -- 5. the language of a row, and no image setup for a local row -------------------------------------------------


def test_language_is_inferred_and_local_rows_get_no_image_setup(swe_data, tmp_path):
    root, _ = swe_data
    rows = load_instances(None, dataset=str(root / "lite.jsonl"))
    assert {i.language for i in rows} == {"python"}  # no `language` in SWE-bench's schema
    (units,) = load_instances(None, dataset=str(root / "pro.jsonl"))
    assert infer_language("acme/units", units.gold_patch, units.test_patch, None, units.base_commit) == "go"
    assert infer_language("pydicom/pydicom", "", "", None, "") == "python"  # the family's own repositories
    only_repo = infer_language("acme/units", "", "", units.repo_path, units.base_commit)
    assert only_repo == "go"  # the repository's files at the base commit
    verified = load_instances("swebench-verified", dataset=str(root / "lite.jsonl"))
    assert all(i.pre_test == [] for i in verified)  # no conda activation: a local row has no image
    hub_row = {**json.loads((root / "lite.jsonl").read_text().splitlines()[0]), "repo_path": None}
    (image_row,) = load_instances("swebench-verified", dataset=str(_write(tmp_path / "hub.jsonl", [hub_row])))
    assert image_row.pre_test[0] == "source /opt/miniconda3/bin/activate"


def _write(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


# -- 6. snapshots hold the base commit alone ----------------------------------------------------------------------


def test_snapshots_hold_the_base_commit_alone(swe_data, tmp_path):
    root, built = swe_data
    tasks = tmp_path / "corpus" / "tasks.jsonl"
    for dataset in ("verified.jsonl", "pro.jsonl"):  # Pro's test setup reads the fix commit: it happens first
        result = CliRunner().invoke(app, ["swe", "tasks", "--dataset", str(root / dataset), "--out", str(tasks)])
        assert result.exit_code == 0, result.output
    for name, repo in (
        ("swe-acme__ledger-101", "ledger"),
        (f"swe-instance_acme__units-{built['units']['fix']}-vnan", "units"),
    ):
        snap = tasks.parent / "repos" / name
        assert git("log", "--all", "--format=%H", cwd=snap).split() == [built[repo]["base"]]
        assert git("rev-parse", "HEAD", cwd=snap).strip() == built[repo]["base"]
        missing = subprocess.run(["git", "cat-file", "-e", built[repo]["fix"]], cwd=snap, capture_output=True)
        assert missing.returncode != 0  # the fix is not in the snapshot at all
        size = sum(f.stat().st_size for f in (snap / ".git").rglob("*") if f.is_file())
        assert size < 64 * 1024, size  # one tree of a few files
    # The main agent's sandbox over a local row, the same way.
    (inst,) = load_instances(None, dataset=str(root / "pro.jsonl"))
    with instance_sandbox(inst, SandboxSpec("local"), for_agent=True) as (box, workdir):
        assert box.run(f"cd {workdir} && git log --all --oneline | wc -l", 30).output.strip() == "1"


# -- 7. the grader checked on a dataset in one command ------------------------------------------------------------


@needs_bwrap
def test_real_rows_benchmark_reports_each_instance(swe_data, tmp_path):
    root, _ = swe_data
    out = tmp_path / "real_rows.json"
    script = Path(__file__).resolve().parents[2] / "benchmarks" / "real_rows.py"
    ids = f"{RENAMES},{CANNOT_START}"
    args = [sys.executable, str(script), "--dataset", str(root / "lite.jsonl"), "--ids", ids, "--out", str(out)]
    done = subprocess.run([*args, "--sandbox", "bwrap"], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    result = json.loads(out.read_text())
    assert result["summary"] == {
        "instances": 2,
        "gold_resolved": 1,
        "empty_unresolved": 2,
        "kept": 1,
        "dropped": {"environment": 1, "instance": 0},
        "agrees": 1,
    }
    by_id = {r["instance_id"]: r for r in result["instances"]}
    assert by_id[RENAMES]["agrees"] and by_id[RENAMES]["gold"]["fail_to_pass"] == {"passed": 2, "failed": 0}
    assert by_id[CANNOT_START]["reason"].startswith("environment: with the gold patch: the test command did not start")
