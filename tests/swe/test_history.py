"""No future history in a task's environment: after it starts, `git log --all`, `git tag`, `git reflog`,
`git rev-list --all` and `git cat-file` find nothing past the base commit, in an image's repository (stripped inside
the sandbox at start, after the test setup that reads the fix commit) and in a local row's (stripped on the host)."""

from __future__ import annotations

import shutil

import pytest

from terminus.sandbox import SandboxSpec, make_sandbox
from terminus.sandbox.bwrap import bwrap_path
from terminus.swe.benchmarks import load_instances
from terminus.swe.corpus import tasks_for
from terminus.swe.environment import LIMITS, instance_sandbox

from .repos import git

needs_bwrap = pytest.mark.skipif(bwrap_path() is None, reason="bubblewrap is not installed")


def _with_future(repo, fix: str) -> None:
    """What a dataset image holds: the fix commit on a branch, a tag on it, reflog entries, objects packed."""
    git("tag", "v-fix", fix, cwd=repo)
    git("checkout", "-q", "fix", cwd=repo)
    git("checkout", "-q", "main", cwd=repo)
    git("gc", "-q", cwd=repo)


def _pro_row_with_future(swe_data, repo):
    """The SWE-Bench Pro row, its repository copied to `repo` with the fix commit's future in it; (row, repo, base
    commit, fix commit)."""
    root, built = swe_data
    (inst,) = load_instances("swebench-pro", dataset=str(root / "pro.jsonl"))
    shutil.copytree(root / inst.repo_path, repo)
    base, fix = built["units"]["base"], built["units"]["fix"]
    _with_future(repo, fix)
    return inst, repo, base, fix


def _sees(box, where: str) -> dict:
    def out(command: str) -> str:
        return box.run(f"cd {where} && {command}", 60).output.strip()

    return {
        "log": out("git log --all --format=%H"),
        "tags": out("git tag"),
        "reflog": out("git reflog --format=%H"),
        "rev_list": out("git rev-list --all"),
        "objects": out("git cat-file --batch-all-objects --batch-check='%(objectname)' | sort"),
        "reachable": out("git rev-list --objects --all | cut -d' ' -f1 | sort"),
    }


def _shows_no_future(seen: dict, box, where: str, base: str, fix: str) -> None:
    assert seen["log"] == seen["rev_list"] == base
    assert seen["tags"] == "" and fix not in seen["reflog"]
    assert seen["objects"] == seen["reachable"]  # no packed or loose object past what the base commit reaches
    shown = box.run(f"cd {where} && git cat-file -p {fix}", 60)
    assert shown.exit_code != 0 and "tree" not in shown.output


@needs_bwrap
def test_an_image_task_starts_with_the_base_commit_alone(swe_data, tmp_path):
    """An image's repository (here: a full-history copy in a bwrap sandbox at the image's workdir) after the
    task's setup: SWE-Bench Pro's test setup has checked the test file out of the fix commit, then the history
    went; the test file stays as the setup left it."""
    inst, repo, base, fix = _pro_row_with_future(swe_data, tmp_path / "image-repo")
    inst.repo_path, inst.image, inst.workdir = None, "an-image", "/workspace"  # as a row with an image is read
    (task, *_) = tasks_for(inst, tmp_path / "tasks.jsonl")
    with make_sandbox(SandboxSpec("bwrap"), repo, LIMITS) as box:
        before = _sees(box, "/workspace")
        assert fix in before["log"].split() and before["tags"] == "v-fix"  # the copy carries the history
        for command in task.setup:
            done = box.run(command, 120)
            assert done.exit_code == 0, (command, done.output)
        _shows_no_future(_sees(box, "/workspace"), box, "/workspace", base, fix)
        assert box.run("git rev-parse HEAD", 30).output.strip() == base
        assert box.run("git status --porcelain", 30).output.split() == ["M", "size_test.go"]  # from the fix commit
        assert "terminus" not in box.run("ls -a", 30).output  # no scratch folder left


@needs_bwrap
def test_a_local_row_starts_with_the_base_commit_alone(swe_data, tmp_path):
    inst, repo, base, fix = _pro_row_with_future(swe_data, tmp_path / "local-repo")
    inst.repo_path = str(repo)
    with instance_sandbox(inst, SandboxSpec("bwrap"), for_agent=True) as (box, workdir):
        _shows_no_future(_sees(box, workdir), box, workdir, base, fix)
    with instance_sandbox(inst, SandboxSpec("bwrap")) as (box, workdir):  # grading's own clone keeps the fix commit
        assert fix in _sees(box, workdir)["log"].split()


def test_a_missing_base_commit_stops_the_start(tmp_path):
    from terminus.swe.history import hide_history

    git("init", "-q", "-b", "main", cwd=tmp_path)
    (tmp_path / "a").write_text("a\n")
    git("add", "a", cwd=tmp_path)
    git("commit", "-q", "-m", "a", cwd=tmp_path)
    with make_sandbox(SandboxSpec("local"), tmp_path, LIMITS) as box:
        done = box.run(hide_history('"$TERMINUS_WORKSPACE"', "0" * 40), 60)
        assert done.exit_code != 0 and "is not in the repository" in done.output
        assert box.run("git log --format=%s", 30).output.strip() == "a"  # nothing was removed
