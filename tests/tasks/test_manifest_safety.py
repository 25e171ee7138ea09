"""Manifest entries are data, never paths; their schema is strict (issue 16)."""

from __future__ import annotations

import subprocess

import pytest
import yaml
from typer.testing import CliRunner

from terminus.cli import app
from terminus.tasks.manifest import ManifestError, checkout, load_manifest


def git(*args, cwd):
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True)


@pytest.fixture
def repo(tmp_path):
    repo = tmp_path / "src-repo"
    repo.mkdir()
    (repo / "test_a.py").write_text("def test_a():\n    assert True\n")
    git("init", "-q", cwd=repo)
    git("add", ".", cwd=repo)
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "x", cwd=repo)
    commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=repo, capture_output=True, text=True).stdout.strip()
    return repo, commit


def _entry(repo, commit, **changes) -> dict:
    entry = {
        "id": "ok-1",
        "repo": str(repo),
        "commit": commit,
        "image": "img",
        "language": "python",
        "task_type": "test-execution",
        "facts": {"tests": {"passed": 1, "failed": 0, "failing": []}},
    }
    return entry | changes


def _write(tmp_path, entries) -> object:
    path = tmp_path / "manifest.yaml"
    path.write_text(yaml.safe_dump(entries))
    return path


def test_a_traversing_id_touches_nothing_outside_the_run(repo, tmp_path):
    """The observed case: `tasks build` deleted a folder outside the run and cloned into it, rc 0."""
    source, commit = repo
    run = tmp_path / "run"
    victim = tmp_path / "victim"  # where run/tasks/repos/manifest-x/../../../victim lands
    victim.mkdir()
    (victim / "precious.txt").write_text("keep me")
    manifest = _write(tmp_path, [_entry(source, commit, id="x/../../../victim")])
    config = tmp_path / "config.yaml"
    config.write_text(
        yaml.safe_dump(
            {
                "run": "t",
                "tasks": {
                    "synthetic": {"enabled": False},
                    "registry": {"enabled": False},
                    "manifests": [str(manifest)],
                },
            }
        )
    )
    out = run / "tasks" / "t.jsonl"
    result = CliRunner().invoke(app, ["tasks", "build", "--config", str(config), "--out", str(out), "--quiet"])
    assert result.exit_code == 2
    assert result.output.strip().splitlines()[-1].startswith("error:") and "x/../../../victim" in result.output
    assert "Traceback" not in result.output
    assert (victim / "precious.txt").read_text() == "keep me" and sorted(victim.iterdir()) == [victim / "precious.txt"]


def test_checkout_refuses_a_destination_outside_its_folder(repo, tmp_path):
    source, commit = repo
    within = tmp_path / "repos"
    within.mkdir()
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    with pytest.raises(ManifestError, match="outside"):
        checkout(_entry(source, commit), within / ".." / "elsewhere", within=within)
    assert outside.is_dir()  # not deleted
    assert checkout(_entry(source, commit), within / "manifest-ok-1", within=within).joinpath("test_a.py").is_file()


@pytest.mark.parametrize(
    ("changes", "says"),
    [
        ({"facts": "lots"}, "facts must be a mapping, not str"),
        ({"setup": "pip install x"}, "setup must be a list, not str"),
        ({"setup": ["pip install x", 3]}, "setup must be a list of commands"),
        ({"imgae": "typo"}, "unknown key 'imgae'"),
        ({"id": ".."}, "id '..' may hold only"),
    ],
)
def test_manifest_schema_is_strict(repo, tmp_path, changes, says):
    source, commit = repo
    path = _write(tmp_path, [_entry(source, commit, **changes)])
    with pytest.raises(ManifestError, match=says) as caught:
        load_manifest(path)
    assert str(path) in str(caught.value) and "entry 0" in str(caught.value)


def test_a_good_entry_still_loads(repo, tmp_path):
    source, commit = repo
    entries = load_manifest(_write(tmp_path, [_entry(source, commit, setup=["pip --version"], description="d")]))
    assert entries[0]["setup"] == ["pip --version"]
