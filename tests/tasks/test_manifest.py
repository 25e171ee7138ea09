"""SWE-bench-style manifests: loaded, checked out at their commit, run in their image (a locally built one)."""

from __future__ import annotations

import subprocess

import pytest
import yaml

from terminus.collect.runner import run_episode
from terminus.judge.facts import check, observations_of
from terminus.models import make_policy
from terminus.runspec import load_run
from terminus.sandbox.docker import HOST_IMAGE
from terminus.sandbox.spec import SandboxSpec
from terminus.tasks.build import build_corpus
from terminus.tasks.manifest import ManifestError, checkout, load_manifest
from terminus.tasks.synthetic import generate


def git(*args, cwd):
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True)


@pytest.fixture
def manifest(tmp_path):
    """A local repository with two commits; the manifest pins the faulty one. (Go: the host image borrows
    /usr, where this machine's Go lives; pytest lives in a pyenv the image does not see.)"""
    repo = tmp_path / "ledger-service"
    project = generate("go", "billing", "fail", index=0, seed=5)
    project.write(repo)
    git("init", "-q", cwd=repo)
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qam", "x", "--allow-empty", cwd=repo)
    git("add", ".", cwd=repo)
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "billing", cwd=repo)
    commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=repo, capture_output=True, text=True).stdout.strip()
    fixed = generate("go", "billing", "pass", index=0, seed=5)
    fixed.write(repo)
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qam", "fix", cwd=repo)
    entry = {
        "id": "ledger-1",
        "repo": "ledger-service",
        "commit": commit,
        "image": HOST_IMAGE,
        "language": "go",
        "task_type": "test-execution",
        "test_cmd": "go test ./...",
        "setup": ["go version"],
        "facts": project.facts,
    }
    path = tmp_path / "manifest.yaml"
    path.write_text(yaml.safe_dump([entry]))
    return path, project


def test_manifest_entries_are_checked(tmp_path):
    path = tmp_path / "m.yaml"
    path.write_text(
        yaml.safe_dump(
            [
                {
                    "id": "a",
                    "repo": "nowhere",
                    "commit": "x",
                    "image": "i",
                    "language": "go",
                    "task_type": "test-execution",
                    "facts": {},
                }
            ]
        )
    )
    with pytest.raises(ManifestError, match="repository nowhere not found"):
        load_manifest(path)
    path.write_text(yaml.safe_dump([{"id": "a", "repo": "x"}]))
    with pytest.raises(ManifestError, match="missing commit, image, language, task_type, facts"):
        load_manifest(path)


@pytest.mark.docker
def test_manifest_task_runs_in_its_image(manifest, tmp_path, docker_engine):
    path, _project = manifest
    config_file = tmp_path / "c.yaml"
    config_file.write_text(
        yaml.safe_dump(
            {
                "run": "t",
                "tasks": {"synthetic": {"enabled": False}, "registry": {"enabled": False}, "manifests": [str(path)]},
            }
        )
    )
    (task,) = build_corpus(load_run(config_file), tmp_path / "out" / "tasks.jsonl", show_progress=False)
    assert task.source == "manifest" and task.image == HOST_IMAGE and task.repo == "ledger-service"
    traj = run_episode(
        task,
        tmp_path / "out" / "tasks.jsonl",
        make_policy("scripted"),
        sandbox=SandboxSpec("docker", docker_url=docker_engine),
        max_turns=10,
    )
    verdict = check(traj.final_answer, task.facts, task.task_type, observations_of(traj.messages))
    assert verdict.recall == 1.0, (verdict.missing, traj.final_answer)  # the pinned (faulty) commit ran


def test_a_manifest_snapshot_holds_its_commit_alone(manifest, tmp_path):
    """The snapshot an agent's sandbox copies has no later commit, branch, tag or reflog (issue 40, "no future
    history"): a full clone let `git log --all` show the fix."""
    path, _ = manifest
    (entry,) = yaml.safe_load(path.read_text())
    repo = path.parent / entry["repo"]
    git("tag", "v-fixed", cwd=repo)
    fixed = subprocess.run(["git", "rev-parse", "HEAD"], cwd=repo, capture_output=True, text=True).stdout.strip()
    within = tmp_path / "repos"
    snap = checkout({**entry, "repo": str(repo)}, within / "ledger-1", within=within)

    def out(*args):
        return subprocess.run(["git", *args], cwd=snap, capture_output=True, text=True)

    assert out("log", "--all", "--format=%H").stdout.split() == [entry["commit"]]
    assert out("tag").stdout == "" and out("reflog").stdout.strip() == ""
    assert out("cat-file", "-e", fixed).returncode != 0
    assert (snap / "go.mod").is_file()
