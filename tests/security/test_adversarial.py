"""Hostile commands. Each case asserts containment, that the harness returns promptly with a result, and that
no process is left behind in the host's process table."""

from __future__ import annotations

import os
import socket
import threading
import time
from pathlib import Path

import pytest

from terminus.agent.terminal import observation
from terminus.sandbox import Limits
from terminus.sandbox.procs import PidsCgroup

# The local backend isolates processes and resources only (docs/use.md, "Sandboxes"); these cases need a
# filesystem, network or PID namespace, so they are run on bwrap and docker and skipped on local.
NEEDS_ISOLATION = "local backend: no filesystem/network/PID isolation by design (see docs/use.md, Sandboxes)"

TIGHT = Limits(
    processes=200, address_space_mb=1024, cpu_time_s=3, file_size_mb=8, output_head_bytes=2000, output_tail_bytes=2000
)


def _processes() -> dict[int, tuple[int, str]]:
    """pid -> (parent pid, command line) of every live user-space process."""
    table = {}
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                stat = Path(f"/proc/{entry.name}/stat").read_text()
                cmdline = (
                    Path(f"/proc/{entry.name}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
                )
            except OSError:
                continue
            fields = stat.rsplit(")", 1)[-1].split()
            kernel_thread = int(fields[6]) & 0x00200000  # PF_KTHREAD
            if fields[0] != "Z" and not kernel_thread:
                table[int(entry.name)] = (int(fields[1]), cmdline.strip())
    return table


def _ours(pid: int, table: dict[int, tuple[int, str]], before: set[int]) -> bool:
    """Whether a new process descends from this test run (or was orphaned to init), not from some other program
    that happens to run on the machine at the same time."""
    seen = set()
    while pid in table and pid not in seen:
        seen.add(pid)
        parent = table[pid][0]
        if parent in (1, os.getpid()):
            return True
        if parent in before:
            return False
        pid = parent
    return True


@pytest.fixture
def no_leftovers():
    """Fails the test if processes started during it are still alive after its sandboxes are closed."""
    before = set(_processes())
    yield
    deadline = time.monotonic() + 10
    while True:
        table = _processes()
        new = {pid: cmd for pid, (_, cmd) in table.items() if pid not in before and pid != os.getpid()}
        new = {pid: cmd for pid, cmd in new.items() if _ours(pid, table, before)}
        # the shared Docker engine (started once per session) and its shims are not the test's leftovers
        new = {pid: cmd for pid, cmd in new.items() if not any(d in cmd for d in ("dockerd", "containerd"))}
        if not new or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert not new, f"processes left behind: {new}"


@pytest.fixture
def box(sandbox_factory, no_leftovers):
    made = []

    def make(**kwargs):
        kwargs.setdefault("limits", TIGHT)
        sandbox = sandbox_factory(**kwargs)
        made.append(sandbox)
        return sandbox

    yield make
    for sandbox in made:
        sandbox.close()


def _skip_on_local(backend: str) -> None:
    if backend == "local":
        pytest.skip(NEEDS_ISOLATION)


def test_fork_bomb(box, backend):
    sandbox = box()
    if backend == "local" and os.geteuid() == 0 and not isinstance(sandbox.tracker, PidsCgroup):
        pytest.skip("no writable pids cgroup here, and RLIMIT_NPROC does not bind root: nothing would bound it")
    started = time.monotonic()
    # the classic bomb, plus a main process that stays alive so the bomb grows until the timeout
    result = sandbox.run(":(){ :|:& };:; sleep 30", 3)
    assert time.monotonic() - started < 30
    assert result.exit_code is not None or result.timed_out


def test_infinite_output(box):
    sandbox = box(limits=Limits(max_output_bytes=20_000_000, output_head_bytes=1000, output_tail_bytes=1000))
    for _ in range(4):  # bwrap exited 0 when its killed child died in 2 of 4 tries: report the kill every time
        result = sandbox.run("yes", 20)
        assert result.output_capped and result.output_bytes >= 20_000_000
        assert len(result.output) < 3000 and result.output.startswith("y\ny\n")
        assert result.exit_code is None, "a command killed at the output cap reported an exit status"
        status = observation(result).splitlines()[-1]
        assert "did not finish" in status and "exit code" not in status


def test_sleep_forever(box):
    result = box().run("sleep infinity", 1)
    assert result.timed_out and result.duration_s < 10


@pytest.mark.parametrize(
    "daemon",
    [
        "nohup sleep 1000 >/dev/null 2>&1 &",
        "setsid sleep 1001 &",
        "(setsid sh -c 'sleep 1002 & exit' &) ; sleep 0.2",
        "python3 -c 'import os,time\nif os.fork(): os._exit(0)\nos.setsid()\n"
        "if os.fork(): os._exit(0)\ntime.sleep(1003)'",
    ],
    ids=["nohup", "setsid", "double-fork-shell", "double-fork-python"],
)
def test_background_daemons_do_not_survive(box, daemon):
    sandbox = box()
    started = time.monotonic()
    result = sandbox.run(f"{daemon}\necho launched", 10)
    assert "launched" in result.output and not result.timed_out
    assert time.monotonic() - started < 5
    assert sandbox.run("echo next", 10).output == "next\n"


def test_daemon_holding_the_output_pipe(box):
    started = time.monotonic()
    result = box().run("setsid sh -c 'while :; do echo tick; sleep 0.1; done' & echo parent-done", 10)
    assert "parent-done" in result.output
    assert time.monotonic() - started < 5 and not result.timed_out


@pytest.mark.parametrize("command", ["read line; echo got:$line", "python3 -c 'print(input())'", "cat"])
def test_commands_waiting_on_stdin_return(box, command):
    result = box().run(command, 10)
    assert not result.timed_out and result.duration_s < 5


def test_rm_rf_home_stays_in_the_sandbox(box, tmp_path, monkeypatch):
    canary = tmp_path / "harness-home"
    canary.mkdir()
    (canary / "keep").write_text("x")
    monkeypatch.setenv("HOME", str(canary))  # if HOME leaked, only this canary would go
    sandbox = box()
    sandbox.run("touch ~/mine && rm -rf ~/ 2>/dev/null; true", 10)
    assert (canary / "keep").exists()


def test_writes_outside_the_workspace_fail(box, backend):
    _skip_on_local(backend)
    result = box().run("touch /etc/terminus-escape; echo x > /usr/terminus-escape; echo done", 10)
    assert "done" in result.output
    assert not Path("/etc/terminus-escape").exists() and not Path("/usr/terminus-escape").exists()


def test_host_repo_is_not_writable(box, backend, tmp_path):
    _skip_on_local(backend)
    (tmp_path / "main.py").write_text("print('original')\n")
    sandbox = box(source=tmp_path)
    sandbox.run(f"echo pwned > {tmp_path}/main.py; echo pwned > main.py", 10)
    assert (tmp_path / "main.py").read_text() == "print('original')\n"


@pytest.fixture
def loopback_listener():
    """A TCP listener on 127.0.0.1 that records whether anything connected."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    server.settimeout(0.2)
    hits: list[bool] = []
    stop = threading.Event()

    def accept() -> None:
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except OSError:
                continue
            hits.append(True)
            conn.close()

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield server.getsockname()[1], hits
    stop.set()
    thread.join()
    server.close()


@pytest.mark.parametrize("client", ["curl", "python"])
def test_network_egress_is_blocked(box, backend, loopback_listener, client):
    _skip_on_local(backend)
    port, hits = loopback_listener
    command = {
        "curl": f"curl -sS -m 3 http://127.0.0.1:{port}/ && echo CONNECTED",
        "python": f"python3 -c \"import socket; socket.create_connection(('127.0.0.1', {port}), 3); "
        "print('CONNECTED')\"",
    }[client]
    result = box().run(command, 15)
    assert "CONNECTED" not in result.output and result.exit_code != 0
    assert not hits


def test_harness_secrets_do_not_reach_commands(box, backend, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-canary-secret")
    monkeypatch.setenv("HF_TOKEN", "hf-canary-secret")
    sandbox = box()
    assert "canary" not in sandbox.run("env", 10).output
    if backend != "local":  # under local, the harness's /proc/<pid>/environ is readable by the same user
        assert "canary" not in sandbox.run("cat /proc/*/environ 2>/dev/null | tr '\\0' '\\n'", 10).output


def test_filling_the_disk_is_stopped(box):
    sandbox = box()
    result = sandbox.run("dd if=/dev/zero of=big.bin bs=1M count=100", 20)
    assert result.exit_code != 0
    assert (sandbox.workspace / "big.bin").stat().st_size <= 8 * 1024 * 1024


def test_memory_bomb(box):
    result = box().run("python3 -c 'x = bytearray(4 * 1024**3); print(\"allocated\")'", 20)
    assert "allocated" not in result.output and result.exit_code != 0
    assert "MemoryError" in result.output


def test_cpu_spin_past_the_cpu_limit(box):
    result = box().run("while :; do :; done", 30)
    assert not result.timed_out and result.exit_code != 0  # SIGXCPU, well before the wall-clock timeout
    assert result.duration_s < 20


def test_binary_output(box):
    result = box().run("cat /bin/ls", 10)
    assert result.exit_code == 0 and result.truncated
    result.output.encode("utf-8")  # always valid text


def test_one_megabyte_single_line(box):
    result = box().run("head -c 1000000 /dev/zero | tr '\\0' x", 10)
    assert result.exit_code == 0 and result.truncated
    assert result.output_bytes == 1_000_000 and len(result.output) < 5000


def test_command_that_closes_stdout_early(box):
    result = box().run("exec >&- 2>&-; sleep 30", 1)
    assert result.timed_out and result.duration_s < 10
    result = box().run("exec >&- 2>&-; sleep 0.3; exit 4", 10)
    assert result.exit_code == 4 and not result.timed_out
