"""Workspaces copy what git sees, skip special files, and live under a per-run temp root that a later run removes
when its owner died (issue 16)."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from typer.testing import CliRunner

from terminus.cli import app
from terminus.sandbox import SandboxError, SandboxSpec, make_sandbox, tmproot
from terminus.sandbox.workspace import Workspace


def git(*args, cwd):
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True)


@pytest.fixture
def checkout(tmp_path) -> Path:
    """A git work tree like this repository's: tracked files, an untracked one, and ignored .venv/results."""
    repo = tmp_path / "checkout"
    (repo / "src").mkdir(parents=True)
    (repo / "src" / "app.py").write_text("print('hi')\n")
    (repo / ".gitignore").write_text(".venv/\nresults/\n__pycache__/\n")
    git("init", "-q", cwd=repo)
    git("add", ".", cwd=repo)
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "x", cwd=repo)
    (repo / "notes.md").write_text("untracked, not ignored\n")
    for ignored in (".venv/lib/big.bin", "results/run/model.bin", "src/__pycache__/app.pyc"):
        (repo / ignored).parent.mkdir(parents=True, exist_ok=True)
        (repo / ignored).write_bytes(b"\0" * 1024)
    return repo


def _files(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*") if p.is_file() and ".git" not in p.parts}


def test_a_git_work_tree_is_copied_as_git_sees_it(checkout):
    ws = Workspace(checkout)
    try:
        assert _files(ws.repo) == {".gitignore", "src/app.py", "notes.md"}
        assert (ws.repo / ".git").is_dir()  # git status works inside
        status = subprocess.run(["git", "status", "--porcelain"], cwd=ws.repo, capture_output=True, text=True)
        assert status.stdout.strip() == "?? notes.md"
    finally:
        ws.remove()


def test_a_subfolder_is_copied_as_git_sees_it_and_an_ignored_one_whole(checkout):
    """A snapshot under results/ (ignored by the checkout) is data: copied whole, not emptied."""
    demo = checkout / "src"
    (demo / "odd name é.py").write_text("x = 1\n")
    ws = Workspace(demo)
    try:
        assert _files(ws.repo) == {"app.py", "odd name é.py"}  # __pycache__ is ignored
    finally:
        ws.remove()
    snapshot = checkout / "results" / "run"
    (snapshot / "__pycache__").mkdir()
    (snapshot / "__pycache__" / "m.pyc").write_bytes(b"\0")
    ws = Workspace(snapshot)
    try:
        assert _files(ws.repo) == {"model.bin", "__pycache__/m.pyc"}
    finally:
        ws.remove()


def test_copy_all_copies_everything(checkout):
    ws = Workspace(checkout, copy="all")
    try:
        assert {".venv/lib/big.bin", "results/run/model.bin", "src/__pycache__/app.pyc"} <= _files(ws.repo)
    finally:
        ws.remove()


def test_exec_on_a_checkout_leaves_its_venv_and_results_out(checkout):
    """The observed case: `terminus exec --repo .` copied .venv and results/. The subagent's `ls` shows the copy."""
    runner = CliRunner()
    listing = runner.invoke(app, ["run", "--sandbox", "local", "--repo", str(checkout), "ls -A"])
    assert listing.exit_code == 0, listing.output
    assert ".venv" not in listing.output and "results" not in listing.output and "notes.md" in listing.output
    everything = runner.invoke(app, ["run", "--sandbox", "local", "--repo", str(checkout), "--copy", "all", "ls -A"])
    assert ".venv" in everything.output and "results" in everything.output
    done = runner.invoke(app, ["exec", "--sandbox", "local", "--repo", str(checkout), "--query", "run the tests"])
    assert done.exit_code == 0, done.output


@pytest.mark.parametrize("mode", ["git", "all"])
def test_a_named_pipe_is_skipped_with_a_note(tmp_path, mode, caplog):
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "a.txt").write_text("a")
    os.mkfifo(repo / "queue")
    ws = Workspace(repo, copy=mode)
    try:
        assert ws.skipped == ["queue"] and not (ws.repo / "queue").exists()
        assert (ws.repo / "a.txt").read_text() == "a"
        assert "skipped 1 special files" in caplog.text and "queue" in caplog.text
    finally:
        ws.remove()


def test_a_missing_repository_leaves_no_temp_folder(tmp_path):
    before = set(tmproot.run_root().iterdir())
    with pytest.raises(SandboxError, match="does not exist"):
        make_sandbox(SandboxSpec("local"), tmp_path / "missing")
    assert set(tmproot.run_root().iterdir()) == before


def test_workspaces_live_under_a_root_named_with_the_owner_pid():
    with make_sandbox(SandboxSpec("local"), None) as box:
        root = box.workspace.parent.parent
        assert root.name.startswith(f"terminus-run-{os.getpid()}-")
        assert root.parent == Path(tempfile.gettempdir())


def test_roots_of_dead_owners_are_removed_live_ones_kept(tmp_path):
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    stale = tmp_path / f"terminus-run-{dead.pid}-abc"
    (stale / "ws-1" / "workspace").mkdir(parents=True)
    live = tmp_path / f"terminus-run-{os.getppid()}-def"  # our parent lives
    live.mkdir()
    assert tmproot.remove_stale_roots(tmp_path) == [stale]
    assert not stale.exists() and live.is_dir()


FORK = """
import os, sys
from terminus.sandbox import tmproot
root = tmproot.run_root()
pid = os.fork()
if pid == 0:
    sys.exit(0)  # the normal exit path: the child runs the atexit handlers it inherited
os.waitpid(pid, 0)
print(root, root.is_dir())
"""


def test_a_forked_child_leaves_its_parents_root_alone(tmp_path):
    env = os.environ | {"TMPDIR": str(tmp_path)}
    done = subprocess.run([sys.executable, "-c", FORK], capture_output=True, text=True, env=env, timeout=60)
    root, alive = done.stdout.split()
    assert alive == "True", done.stderr
    assert not Path(root).exists()  # and the owner removed it when it exited


# -- a folder copied whole is capped (issue 26) --------------------------------------------------------------------


def sized_folder(root: Path, megabytes: float) -> Path:
    """A folder that is no git work tree, holding `megabytes` MB in one sparse file (no disk used) and a note."""
    root.mkdir(parents=True)
    (root / "notes.txt").write_text("hello\n")
    with (root / "data.bin").open("wb") as f:
        f.truncate(int(megabytes * 1_000_000))
    return root


def one_line_error(result) -> str:
    lines = result.output.strip().splitlines()
    assert result.exit_code == 2 and len(lines) == 1 and lines[0].startswith("error: "), result.output
    return lines[0]


def test_a_folder_over_the_copy_cap_is_refused_with_the_size_and_the_flag(tmp_path, monkeypatch):
    before = set(tmproot.run_root().iterdir())
    home = sized_folder(tmp_path / "home", 250)  # like a home folder: no git, over the default 200 MB
    runner = CliRunner()
    for command in (
        ["run", "--sandbox", "local", "--repo", str(home), "ls"],
        ["exec", "--sandbox", "local", "--repo", str(home), "--query", "run the tests"],
    ):
        line = one_line_error(runner.invoke(app, command))
        assert f"{home} holds more than 200 MB" in line and "--max-copy-mb" in line, line
    small = sized_folder(tmp_path / "small", 3)
    line = one_line_error(
        runner.invoke(app, ["run", "--sandbox", "local", "--repo", str(small), "--max-copy-mb", "2", "ls"])
    )
    assert "more than 2 MB" in line and "(not a git work tree)" in line
    monkeypatch.setenv("TERMINUS_MAX_COPY_MB", "2")
    assert runner.invoke(app, ["run", "--sandbox", "local", "--repo", str(small), "ls"]).exit_code == 2
    lifted = runner.invoke(
        app, ["run", "--sandbox", "local", "--repo", str(small), "--max-copy-mb", "4", "ls -s data.bin"]
    )
    assert lifted.exit_code == 0 and "data.bin" in lifted.output, lifted.output
    assert set(tmproot.run_root().iterdir()) == before  # a refused copy leaves no workspace behind


def test_links_are_not_followed_and_a_git_work_tree_is_not_capped(tmp_path, checkout):
    big = sized_folder(tmp_path / "big", 3)
    linked = tmp_path / "linked"
    linked.mkdir()
    (linked / "data.bin").symlink_to(big / "data.bin")  # 3 MB behind a link: not this folder's
    (linked / "cache").symlink_to(big)
    runner = CliRunner()
    done = runner.invoke(app, ["run", "--sandbox", "local", "--repo", str(linked), "--max-copy-mb", "1", "ls"])
    assert done.exit_code == 0, done.output
    with (checkout / "notes.bin").open("wb") as f:  # untracked, not ignored: git sees it
        f.truncate(3_000_000)
    done = runner.invoke(app, ["run", "--sandbox", "local", "--repo", str(checkout), "--max-copy-mb", "1", "ls"])
    assert done.exit_code == 0 and "notes.bin" in done.output, done.output
    line = one_line_error(
        runner.invoke(
            app, ["run", "--sandbox", "local", "--repo", str(checkout), "--copy", "all", "--max-copy-mb", "1", "ls"]
        )
    )
    assert "more than 1 MB" in line and "(--copy all)" in line
