"""The docker sandbox's boundary (issue 39): binds are read-only as on every backend, nothing a command starts
outlives it whatever it does to its own traps, no setuid or setgid file of container root's stays in a host
folder (and the host's walk that clears them follows no link), and no host unix socket is reachable.

Run against the private Docker engine of tests/conftest.py (skipped, saying why, where none can start).
"""

from __future__ import annotations

import json
import socket
import stat
import subprocess
from pathlib import Path

import pytest

from builders import TERMINUS
from swe.repos import DATA, build
from terminus.sandbox import SandboxError, SandboxSpec, make_sandbox
from terminus.sandbox.binds import parse_bind

pytestmark = pytest.mark.docker
SETID = stat.S_ISUID | stat.S_ISGID


@pytest.fixture
def docker_box(docker_engine, tmp_path):
    """A docker sandbox over the host image and an empty repository; closed after the test."""
    made = []

    def make(binds: tuple[str, ...] = ()):
        box = make_sandbox(SandboxSpec("docker", None, binds, docker_url=docker_engine), tmp_path / "repo")
        made.append(box)
        return box

    (tmp_path / "repo").mkdir()
    yield make
    for box in made:
        box.close()


def _containers(engine: str) -> list:
    import docker

    client = docker.DockerClient(base_url=engine)
    try:
        return client.containers.list(all=True, filters={"label": "terminus.sandbox"})
    finally:
        client.close()


# -- binds ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["rw", "ro,z", "z", "rw,shared"])
def test_a_bind_that_asks_for_any_mode_but_ro_is_refused_before_a_container_exists(
    docker_box, docker_engine, tmp_path, mode
):
    shared = tmp_path / "shared"
    shared.mkdir()
    before = len(_containers(docker_engine))
    bind = f"{shared}:/shared:{mode}"
    with pytest.raises(SandboxError, match="read-only") as err:
        docker_box((bind,))
    assert bind in str(err.value)
    assert len(_containers(docker_engine)) == before, "a container was created for a refused bind"
    assert list(shared.iterdir()) == []


@pytest.mark.parametrize("bind", ["relative/path:/x", "{tmp}/no/such/path:/x", "{tmp}:relative", "{tmp}:/a/../b"])
def test_binds_must_be_absolute_and_exist(docker_box, tmp_path, bind):
    """Refused, naming the bind; the engine would otherwise create a missing host path, as root."""
    bind = bind.format(tmp=tmp_path)
    with pytest.raises(SandboxError) as err:
        docker_box((bind,))
    assert bind in str(err.value)
    assert not (tmp_path / "no").exists()


def test_a_read_only_bind_is_read_only_inside(docker_box, tmp_path):
    shared = tmp_path / "shared"
    shared.mkdir()
    (shared / "data.txt").write_text("host\n")
    box = docker_box((f"{shared}:/shared:ro", f"{shared}:/again"))
    result = box.run("cat /shared/data.txt /again/data.txt; touch /shared/new /again/new; echo > /shared/data.txt", 30)
    assert result.output.count("host") == 2
    assert "Read-only file system" in result.output
    assert sorted(p.name for p in shared.iterdir()) == ["data.txt"]
    assert (shared / "data.txt").read_text() == "host\n"


def test_a_unix_socket_is_never_bound(tmp_path):
    """A read-only bind does not stop connect(): a socket named as a bind is refused on every backend."""
    path = tmp_path / "s.sock"
    server = socket.socket(socket.AF_UNIX)
    try:
        server.bind(str(path))
        with pytest.raises(SandboxError, match="unix socket"):
            parse_bind(f"{path}:/run/s.sock:ro")
    finally:
        server.close()


def test_grade_refuses_a_row_whose_bind_is_writable(docker_engine, tmp_path):
    """`terminus swe grade` on a local row whose `binds` names a writable host folder: the instance is not graded
    and its error names the bind; nothing is written to the folder."""
    build("ledger", tmp_path / "ledger")
    row = json.loads((DATA / "verified.jsonl").read_text().splitlines()[0])
    shared = tmp_path / "shared"
    shared.mkdir()
    bind = f"{shared}:{shared}:rw"
    row |= {"repo_path": str(tmp_path / "ledger"), "binds": [bind]}
    (tmp_path / "rows.jsonl").write_text(json.dumps(row) + "\n")
    prediction = {"instance_id": row["instance_id"], "model_name_or_path": "m", "model_patch": row["patch"]}
    (tmp_path / "preds.jsonl").write_text(json.dumps(prediction) + "\n")
    args = ["swe", "grade", "--dataset", str(tmp_path / "rows.jsonl"), "--predictions", str(tmp_path / "preds.jsonl")]
    args += ["--sandbox", "docker", "--docker-url", docker_engine, "--out", str(tmp_path / "report.json")]
    done = subprocess.run([TERMINUS, *args], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert f"bind {bind}: binds are read-only" in done.stdout, done.stdout[-2000:]
    assert "0 of 1 instances resolved" in done.stdout
    assert list(shared.iterdir()) == []


def _processes(box) -> list[str]:
    """The command lines of the container's processes, as the host's ps sees them (none when it is stopped)."""
    box.container.reload()
    if box.container.status != "running":
        return []
    return [row[-1] for row in box.container.top(ps_args="-eo pid,stat,args")["Processes"]]


# -- processes -----------------------------------------------------------------------------------------------

ESCAPES = {
    "trap removed": "(sleep 301 &) ; trap - EXIT",
    "trap replaced": "sleep 302 & trap 'exit 0' EXIT",
    "exec": "sleep 303 >/dev/null 2>&1 & exec true",
    "setsid nohup then exec": "setsid nohup sleep 304 >/dev/null 2>&1 & exec true",
    "double fork, output held, exec": "( (sleep 305 &) & ) ; exec true",
}


@pytest.mark.parametrize("command", ESCAPES.values(), ids=ESCAPES.keys())
def test_nothing_the_command_starts_outlives_it_whatever_it_does_to_its_traps(docker_box, command):
    box = docker_box()
    result = box.run(command, 60)
    assert not result.timed_out and result.duration_s < 20, result
    assert result.exit_code == 0, result
    left = [args for args in _processes(box) if "sleep 30" in args]
    assert not left, f"still running in the container after the command returned: {left}"
    # The container works on: the next command runs, in the same shell state.
    after = box.run("echo still here", 30)
    assert after.exit_code == 0 and "still here" in after.output


# -- setuid and setgid bits ----------------------------------------------------------------------------------


def _setid_files(folder: Path) -> list[str]:
    """Regular files with a setuid or setgid bit below `folder`, links not followed (find: no recursion limit)."""
    done = subprocess.run(["find", str(folder), "-type", "f", "-perm", "/6000"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return done.stdout.split()


def test_container_root_leaves_no_setuid_file_in_a_host_folder(docker_box, tmp_path):
    """`cp /bin/sh x; chmod u+s x` as container root, in every folder the command can write, and a tree deeper
    than Python's recursion limit: no host copy keeps a setuid or setgid bit. A link in the workspace to a host
    setuid file is not followed: that file keeps its bits."""
    victim = tmp_path / "host-setuid"
    victim.write_text("#!/bin/sh\n")
    victim.chmod(0o6755)
    box = docker_box()
    command = (
        'for d in "$TERMINUS_WORKSPACE" "$HOME" /tmp /run/terminus; do cp /bin/sh "$d/x" && chmod u+s "$d/x" && '
        'cp /bin/sh "$d/g" && chmod 2755 "$d/g" || exit 1; done; '
        f"ln -s {victim} link-to-host; mkdir -p a/b && cp /bin/sh a/b/y && chmod 6755 a/b/y && "
        "(for i in $(seq 1100); do mkdir d && cd d || exit 1; done; cp /bin/sh deep && chmod 4755 deep) && "
        "ls -l x | cut -c1-10"
    )
    try:
        result = box.run(command, 120)
        assert result.exit_code == 0, result.output
        assert result.output.startswith("-rwsr-xr-x"), result.output  # the bit was set inside
        ws = box.ws
        assert _setid_files(ws.root) == []
        assert (ws.repo / "x").is_file() and (ws.repo / "a" / "b" / "y").is_file()
        assert stat.S_IMODE((ws.repo / "a" / "b" / "y").stat().st_mode) == 0o755
        assert stat.S_IMODE(victim.lstat().st_mode) == 0o6755, "the host's walk followed a link"
    finally:  # the deep tree is this test's business, not the workspace cleanup's (issue 39, severe 3)
        subprocess.run(["rm", "-rf", "--", str(box.ws.repo / "d")], check=False)


def test_a_setuid_file_made_before_a_timeout_is_cleared(docker_box):
    box = docker_box()
    result = box.run("cp /bin/sh x && chmod u+s x && sleep 100", 3)
    assert result.timed_out
    assert _setid_files(box.ws.root) == []
    assert box.run("test -u x || echo cleared", 30).output.strip() == "cleared"


# -- unix sockets --------------------------------------------------------------------------------------------


def test_no_unix_socket_is_reachable_inside(docker_box):
    """The host image's binds (/usr and a few /etc files) hold no socket, /tmp and /run are the sandbox's own, and
    the network namespace (abstract sockets) is the container's: nothing the host serves is reachable."""
    box = docker_box()
    result = box.run("find / -path /proc -prune -o -type s -print 2>/dev/null; ls /var/run /run 2>&1; true", 60)
    assert ".sock" not in result.output and "docker" not in result.output, result.output
    assert box.run("find / -path /proc -prune -o -type s -print 2>/dev/null | wc -l", 60).output.strip() == "0"


# -- the bound folders ---------------------------------------------------------------------------------------


def test_links_planted_where_the_folders_are_mounted_stay_inside_on_a_restart(docker_box, tmp_path):
    """Container root replaces /run (where the state and control folders are mounted) and /home by links to a host
    folder and stops the container's init: the restart resolves those mount points inside the container's own
    root, the host folder stays empty, and the control folder stays read-only."""
    host = tmp_path / "hostdir"
    host.mkdir()
    box = docker_box()
    planted = box.run(f"mv /run /run.old && ln -s {host} /run && mv /home /home.old && ln -s {host} /home; kill 1", 30)
    assert planted.exit_code in (0, None), planted.output
    after = box.run("echo restarted > /run/terminus-control/command; touch $HOME/h /run/terminus/s; echo done", 30)
    assert "done" in after.output and "Read-only file system" in after.output, after.output
    assert list(host.iterdir()) == []
    assert box.run("ln /etc/passwd pw", 30).exit_code != 0  # no hard link to a file outside the bind
