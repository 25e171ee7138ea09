from __future__ import annotations

from typer.testing import CliRunner

from terminus.cli import app

runner = CliRunner()


def test_run_prints_the_observation(tmp_path):
    (tmp_path / "notes.txt").write_text("hello\n")
    result = runner.invoke(app, ["run", "cat notes.txt", "--repo", str(tmp_path), "--sandbox", "local"])
    assert result.exit_code == 0
    assert result.output == "hello\n[exit code 0]\n"


def test_missing_repo_is_one_clear_line(tmp_path):
    result = runner.invoke(app, ["run", "ls", "--repo", str(tmp_path / "nope"), "--sandbox", "local"])
    assert result.exit_code == 2
    assert "does not exist" in result.output


def test_unknown_sandbox(tmp_path):
    result = runner.invoke(app, ["run", "ls", "--repo", str(tmp_path), "--sandbox", "podman"])
    assert result.exit_code == 2 and "'podman' is not one of 'local', 'bwrap', 'docker', 'apptainer'" in result.output


def test_demo_runs_the_bundled_project():
    result = runner.invoke(app, ["demo", "--sandbox", "local"])
    assert result.exit_code == 0, result.output
    assert "1 failed, 3 passed" in result.output
    assert "tests/test_totals.py::test_invoice_total_adds_vat" in result.output.split("returns:")[1]
