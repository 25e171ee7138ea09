"""The host's copy of a repository, its removal of workspaces and run roots, and what bwrap's user can read, attacked
through the public CLI (`terminus run`) and, for a main agent's workspace, from inside a sandbox.

- A repository's own git index lists `lnk/../../../../pwned` (git lists it; only `git update-index` refuses to make
  one), with `lnk` an ignored link: the old copy made `lnk` a real folder and wrote outside the workspace; an entry
  `x/secret`, with `x` an ignored link to a host folder, copied a mode-600 host file in.
- A command that makes a tree deeper than Python's recursion limit ended its own run with a traceback and made every
  later run fail in the stale-root sweep.
- bwrap under a root harness mapped the command's user to root: every root-only file in view was readable.

A hostile probe after those fixes (round 4) added: a file named `terminus-run-<pid over C long>-x`, owned by anyone,
stopped every later run; host git, listing a workspace a sandbox wrote, read the exclude patterns that workspace
names (`.git/info/exclude` as a link, `core.excludesFile`), an oracle of a root-only file's lines; a FIFO at
`sub/.gitignore` blocked the copy for 300 s; a name over NAME_MAX failed the whole copy; index names reached the
terminal raw in the copy's warning.
"""

from __future__ import annotations

import base64
import hashlib
import os
import shutil
import socket
import struct
import subprocess
import sys
import time
from pathlib import Path

import pytest

from terminus.mainagent.harness import Workbench
from terminus.sandbox import SandboxSpec, make_sandbox
from terminus.sandbox.bwrap import SANDBOX_UID, bwrap_path
from terminus.sandbox.fdtree import remove_tree

TERMINUS = str(Path(sys.executable).with_name("terminus"))
BACKENDS = ["local", pytest.param("bwrap", marks=pytest.mark.skipif(bwrap_path() is None, reason="no bubblewrap"))]
as_root = pytest.mark.skipif(os.geteuid() != 0, reason="needs root: the harness-as-root cases and chown")
needs_bwrap = pytest.mark.skipif(bwrap_path() is None, reason="bubblewrap is not installed")


def git_index(names: list[str]) -> bytes:
    """A version-2 git index listing `names` as empty regular files, checksum included: what a repository (or a
    sandboxed command) can write into `.git/index` with no git command's checks."""
    body = b""
    blob = bytes.fromhex("e69de29bb2d1d6434b8b29ae5a3bd7cd9e4b2b9d")  # the empty blob
    for name in sorted(n.encode() for n in names):
        entry = struct.pack(">10I", 0, 0, 0, 0, 0, 0, 0o100644, 0, 0, 0) + blob + struct.pack(">H", len(name)) + name
        entry += b"\0" * (8 - len(entry) % 8)
        body += entry
    data = b"DIRC" + struct.pack(">II", 2, len(names)) + body
    return data + hashlib.sha1(data).digest()


def hostile_repo(root: Path, entries: list[str], link: str) -> Path:
    """A git repository whose index lists `entries`, with `lnk` an ignored link to `link`."""
    repo = root / "repo"
    repo.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    (repo / ".gitignore").write_text("lnk\nx\npwned\n")
    (repo / "README").write_text("hello\n")
    (repo / ".git" / "index").write_bytes(git_index(["README", ".gitignore", *entries]))
    os.symlink(link, repo / "lnk")
    return repo


def dead_pid() -> int:
    """The pid of a process that has exited and been reaped."""
    proc = subprocess.Popen(["true"])
    proc.wait()
    return proc.pid


def terminus_run(repo: Path, backend: str, command: str, tmpdir: Path) -> subprocess.CompletedProcess:
    tmpdir.mkdir(exist_ok=True)
    return subprocess.run(
        [TERMINUS, "run", "--repo", str(repo), "--sandbox", backend, command],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "TMPDIR": str(tmpdir)},
    )


@pytest.mark.parametrize("backend", BACKENDS)
def test_an_index_entry_with_dotdot_through_a_link_writes_nothing_outside(tmp_path, backend):
    # lnk -> a/b/c/d, so the source side resolves `lnk/../../../../pwned` to the repository's own `pwned`: no host
    # path needs to be known. On the copy's side, `lnk` made a real folder lets the same `..`s climb out of the
    # workspace, to $TMPDIR/pwned (workspace -> ws-* -> terminus-run-* -> $TMPDIR).
    repo = hostile_repo(tmp_path, ["lnk/../../../../pwned"], "a/b/c/d")
    (repo / "a" / "b" / "c" / "d").mkdir(parents=True)
    (repo / "pwned").write_text("payload\n")
    tmpdir = tmp_path / "t"
    done = terminus_run(repo, backend, "cat README; ls", tmpdir)
    assert done.returncode == 0, done.stderr
    assert "hello" in done.stdout
    assert not (tmpdir / "pwned").exists(), "the copy wrote outside the workspace"
    assert "lnk/../../../../pwned" in done.stderr  # named once, in the copy's note
    assert list(tmpdir.iterdir()) == []  # and nothing is left behind


@pytest.mark.parametrize("backend", BACKENDS)
def test_an_index_entry_through_an_ignored_link_reads_no_host_file(tmp_path, backend):
    secret_dir = tmp_path / "host-secrets"
    secret_dir.mkdir()
    (secret_dir / "secret").write_text("TOP-SECRET-TOKEN\n")
    (secret_dir / "secret").chmod(0o600)
    repo = hostile_repo(tmp_path, ["lnk/secret"], str(secret_dir))
    done = terminus_run(repo, backend, "cat lnk/secret; find . -name secret -not -path './.git/*'", tmp_path / "t")
    assert done.returncode == 0, done.stderr
    assert "TOP-SECRET-TOKEN" not in done.stdout
    # the ignored link is not listed by git, so it is not there at all; the refused entry is named
    assert "./lnk/secret" not in done.stdout
    assert "lnk/secret" in done.stderr


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_listed_link_is_copied_as_a_link_and_never_followed(tmp_path, backend):
    repo = tmp_path / "repo"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    os.symlink("/etc/hostname", repo / "tracked-link")
    (repo / "dir").mkdir()
    (repo / "dir" / "f").write_text("f\n")
    os.symlink("dir", repo / "dirlink")
    subprocess.run(["git", "-C", str(repo), "add", "-A"], check=True)
    # and an index that also lists a file *through* the tracked folder link
    names = subprocess.run(["git", "-C", str(repo), "ls-files"], capture_output=True, text=True).stdout.split()
    (repo / ".git" / "index").write_bytes(git_index([*names, "dirlink/f"]))
    done = terminus_run(repo, backend, "readlink tracked-link dirlink; ls -la dirlink/", tmp_path / "t")
    assert done.returncode == 0, done.stderr
    assert "/etc/hostname\ndir\n" in done.stdout
    assert "dirlink/f" in done.stderr  # refused: it passes through a link


@needs_bwrap
def test_a_hostile_index_made_inside_a_main_agents_sandbox_cannot_reach_the_host_through_the_subagents_copy(
    tmp_path, monkeypatch
):
    """A main agent's shell writes its workspace's `.git/index` and the link; the `execution_subagent` call then
    copies that workspace on the host (`Workbench.subagent_box`)."""
    monkeypatch.setenv("TMPDIR", str(tmp_path / "t"))
    (tmp_path / "t").mkdir()
    secret = tmp_path / "host-secret"
    secret.mkdir()
    (secret / "key").write_text("HOST-KEY\n")
    (secret / "key").chmod(0o600)
    repo = tmp_path / "repo"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    (repo / "README").write_text("hi\n")
    index = base64.b64encode(git_index(["README", "x/key", "lnk/../../../../pwned"])).decode()
    with make_sandbox(SandboxSpec("bwrap"), repo) as box:
        bench = Workbench(box, SandboxSpec("bwrap"), None, subagent_turns=3)
        made = box.run(
            f"echo {index} | base64 -d > .git/index && printf 'x\\nlnk\\npwned\\n' > .gitignore && "
            f"ln -s {secret} x && mkdir -p a/b/c/d && ln -s a/b/c/d lnk && echo payload > pwned && git ls-files",
            60,
        )
        assert made.exit_code == 0 and "lnk/../../../../pwned" in made.output, made.output
        with bench.subagent_box() as sub:
            seen = sub.run("cat x/key; ls -la; ls x", 60).output
    assert "HOST-KEY" not in seen
    assert not any(p.name == "pwned" for p in (tmp_path / "t").rglob("pwned") if "workspace" not in str(p))


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_tree_deeper_than_pythons_recursion_stops_no_run(tmp_path, backend):
    """1,100 nested folders: the run that made them ends normally and removes its root, and so does the next; a
    planted deep root of a dead process is swept without an error."""
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "f").write_text("x\n")
    tmpdir = tmp_path / "t"
    try:
        _deep_trees_stop_nothing(repo, backend, tmpdir)
    finally:  # pytest's own clean-up of its temp folders recurses: never leave it a deep tree
        remove_tree(tmpdir)


def _deep_trees_stop_nothing(repo: Path, backend: str, tmpdir: Path) -> None:
    deep = "for i in $(seq 1100); do mkdir d && cd d || exit 1; done; echo made"
    done = terminus_run(repo, backend, deep, tmpdir)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "made" in done.stdout and "RecursionError" not in done.stderr
    assert list(tmpdir.iterdir()) == []
    # a dead owner's root as deep: swept by the next run, quietly
    stale = tmpdir / f"terminus-run-{dead_pid()}-abc"
    stale.mkdir()
    fd = os.open(stale, os.O_RDONLY | os.O_DIRECTORY)
    for _ in range(1100):
        os.mkdir("d", dir_fd=fd)
        fd, parent = os.open("d", os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd), fd
        os.close(parent)
    os.close(fd)
    again = terminus_run(repo, backend, "echo again", tmpdir)
    assert again.returncode == 0 and "again" in again.stdout, again.stderr[-2000:]
    assert not stale.exists()


@as_root
def test_a_stale_root_another_user_planted_is_left_alone_and_stops_nothing(tmp_path):
    repo = tmp_path / "repo"
    repo.mkdir()
    tmpdir = tmp_path / "t"
    tmpdir.mkdir()
    planted = tmpdir / f"terminus-run-{dead_pid()}-x"
    planted.mkdir()
    (planted / "keep").write_text("theirs\n")
    os.chown(planted, SANDBOX_UID, SANDBOX_UID)
    done = terminus_run(repo, "local", "echo ok", tmpdir)
    assert done.returncode == 0 and "ok" in done.stdout
    assert (planted / "keep").read_text() == "theirs\n"


@as_root
@needs_bwrap
def test_bwrap_under_root_reads_no_root_only_file_and_sees_no_roots_home(tmp_path):
    secret = Path("/var/tmp") / f"terminus-test-secret-{os.getpid()}"
    secret.write_text("ROOT-ONLY\n")
    secret.chmod(0o600)
    try:
        done = terminus_run(tmp_path, "bwrap", f"id -u; cat {secret}; cat /etc/shadow; ls -a /root", tmp_path / "t")
    finally:
        secret.unlink()
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == str(SANDBOX_UID)
    assert "ROOT-ONLY" not in done.stdout and "root:" not in done.stdout
    assert "Permission denied" in done.stdout
    shown = set(done.stdout.split()) & {".bashrc", ".profile", ".npmrc", ".gitconfig", ".ssh", ".config"}
    assert not shown, f"/root shows {shown}"


@as_root
@needs_bwrap
def test_bwrap_under_root_still_runs_the_toolchains_that_live_in_roots_home(tmp_path):
    """The toolchains under /root (pyenv's Python behind the venv, rustup's cargo) are bound read-only."""
    tools = [t for t in ("python3", "cargo") if shutil.which(t)]
    done = terminus_run(tmp_path, "bwrap", "; ".join(f"{t} --version" for t in tools), tmp_path / "t")
    assert done.returncode == 0, done.stderr
    assert "command not found" not in done.stdout and "Permission denied" not in done.stdout, done.stdout


@as_root
@pytest.mark.parametrize("backend", BACKENDS)
def test_a_repository_another_user_owns_is_copied_by_its_listing_never_whole(tmp_path, backend):
    """git refuses it ("dubious ownership"); that refusal used to mean "not a work tree, copy every file"."""
    repo = tmp_path / "repo"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    (repo / ".gitignore").write_text(".env\n")
    (repo / ".env").write_text("API_KEY=hunter2\n")
    (repo / "app.py").write_text("print(1)\n")
    subprocess.run(["chown", "-R", f"{SANDBOX_UID}:{SANDBOX_UID}", str(repo)], check=True)
    done = terminus_run(repo, backend, "ls -a; cat .env", tmp_path / "t")
    assert done.returncode == 0, done.stderr
    assert "app.py" in done.stdout
    assert "hunter2" not in done.stdout


@as_root
@needs_bwrap
def test_bwrap_under_root_cannot_connect_to_a_root_only_unix_socket_in_view(tmp_path):
    """A socket in a visible host folder (/var/tmp) that only root may use (mode 600): refused; /run and /tmp, where
    most sockets live, are the sandbox's own (docs/use.md says so)."""
    path = Path("/var/tmp") / f"terminus-test-{os.getpid()}.sock"
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(path))
    path.chmod(0o600)
    server.listen(1)
    probe = f"python3 -c \"import socket; s = socket.socket(socket.AF_UNIX); s.connect('{path}'); print('CONNECTED')\""
    try:
        done = terminus_run(tmp_path, "bwrap", f"{probe}; ls /run /tmp", tmp_path / "t")
    finally:
        server.close()
        path.unlink()
    assert done.returncode == 0, done.stderr
    assert "CONNECTED" not in done.stdout
    assert "Permission denied" in done.stdout


@pytest.fixture
def repo(tmp_path):
    repo = tmp_path / "repo"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    (repo / "README").write_text("hi\n")
    return repo


@as_root
@pytest.mark.parametrize("pid", [2**31, 2**63, 10**30])
def test_a_stale_root_name_with_a_huge_pid_stops_no_run(tmp_path, repo, pid):
    tmpdir = tmp_path / "t"
    tmpdir.mkdir(mode=0o1777)
    tmpdir.chmod(0o1777)
    planted = tmpdir / f"terminus-run-{pid}-x"
    planted.touch()
    os.chown(planted, 65534, 65534)  # another local user's empty file
    done = terminus_run(repo, "local", "echo ok", tmpdir)
    assert done.returncode == 0 and "ok" in done.stdout, done.stderr[-500:]


@needs_bwrap
@pytest.mark.parametrize("how", ["info-exclude-link", "core-excludesFile"])
def test_host_git_reads_no_exclude_file_the_sandbox_names(tmp_path, repo, monkeypatch, how):
    monkeypatch.setenv("TMPDIR", str(tmp_path / "t"))
    (tmp_path / "t").mkdir()
    secret = tmp_path / "secret"
    secret.write_text("hunter2\n")
    secret.chmod(0o600)
    plant = (
        f"rm -f .git/info/exclude && ln -s {secret} .git/info/exclude"
        if how == "info-exclude-link"
        else f"git config core.excludesFile {secret}"
    )
    with make_sandbox(SandboxSpec("bwrap"), repo) as box:
        bench = Workbench(box, SandboxSpec("bwrap"), None, subagent_turns=3)
        made = box.run(f"{plant} && touch hunter2 guess1", 60)
        assert made.exit_code == 0, made.output
        with bench.subagent_box() as sub:
            seen = sub.run("ls", 60).output.split()
    assert "guess1" in seen
    assert "hunter2" in seen, "which files were copied depends on a host file the sandbox cannot read"


@needs_bwrap
def test_a_fifo_gitignore_does_not_block_the_subagents_copy(tmp_path, repo, monkeypatch):
    monkeypatch.setenv("TMPDIR", str(tmp_path / "t"))
    (tmp_path / "t").mkdir()
    with make_sandbox(SandboxSpec("bwrap"), repo) as box:
        bench = Workbench(box, SandboxSpec("bwrap"), None, subagent_turns=3)
        assert box.run("mkdir sub && mkfifo sub/.gitignore", 60).exit_code == 0
        start = time.monotonic()
        with bench.subagent_box():
            took = time.monotonic() - start
    assert took < 30, f"the host's copy blocked {took:.0f} s on a FIFO the sandbox made"


def test_an_index_entry_with_a_too_long_name_is_skipped_not_fatal(tmp_path, repo):
    (repo / ".git" / "index").write_bytes(git_index(["README", "x" * 300]))
    done = terminus_run(repo, "local", "cat README", tmp_path / "t")
    assert done.returncode == 0 and "hi" in done.stdout, done.stderr[-500:]


def test_index_names_reach_the_terminal_without_control_characters(tmp_path, repo):
    (repo / ".git" / "index").write_bytes(git_index(["README", "\x1b]52;c;aGVsbG8=\x07\x1b[2J/../evil"]))
    done = terminus_run(repo, "local", "true", tmp_path / "t")
    assert "\x1b" not in done.stderr and "\x07" not in done.stderr, repr(done.stderr[-300:])
