"""The engine of the backends whose command is a local process (local, bwrap, apptainer): the command's
environment (an allowlist of the harness's variables), its launch in a process group (and a pids cgroup where one
can be made), its output read to EOF, the deadline or the output cap, and the kill of whatever it left running."""

from __future__ import annotations

import contextlib
import os
import selectors
import signal
import subprocess
import time
from pathlib import Path

from terminus.sandbox.output import OutputCollector
from terminus.sandbox.procs import MARKER_VAR, EnvMarker, PidsCgroup, make_tracker
from terminus.sandbox.protocol import CommandResult, Limits
from terminus.sandbox.workspace import SandboxBase, Workspace

# Only these variables of the harness reach a command: API keys, tokens and cluster credentials never do.
ENV_ALLOWLIST = ("PATH", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "USER", "LOGNAME")
# Where rustup and pyenv keep their toolchains; read-only use is enough, so they are passed through.
TOOLCHAIN_HOMES = {"RUSTUP_HOME": ".rustup", "PYENV_ROOT": ".pyenv"}


class ProcessSandbox(SandboxBase):
    """Base for backends whose command is a local process (local, bwrap, apptainer).

    Subclasses give `argv()` (how bash is launched) and the paths as the command sees them.
    """

    name = "process"

    def __init__(
        self,
        source: Path | None = None,
        limits: Limits | None = None,
        network: bool = False,
        copy: str = "git",
        max_copy_bytes: int | None = None,
    ) -> None:
        self.limits = limits or Limits()
        self.network = network
        self.ws = Workspace(source, copy=copy, max_copy_bytes=max_copy_bytes, owner=self.sandbox_owner())
        self.workspace = self.ws.repo
        self.tracker = make_tracker(self.limits.processes)
        self._closed = False
        self._prepare_folders()

    @classmethod
    def from_spec(cls, spec, source, limits, network, **sizes):
        """The spec's binds and image are not this backend's (local sees the host as it is)."""
        return cls(source, limits, network, **sizes)

    # -- what subclasses provide -------------------------------------------------------------------
    def argv(self) -> list[str]:
        raise NotImplementedError

    def sandbox_owner(self) -> tuple[int, int] | None:
        """(uid, gid) the command runs as when it is not the harness's user; None: the harness's."""
        return None

    # -- shared ------------------------------------------------------------------------------------
    def env(self) -> dict[str, str]:
        env = {k: os.environ[k] for k in ENV_ALLOWLIST if k in os.environ}
        env.setdefault("PATH", "/usr/local/bin:/usr/bin:/bin")
        env.setdefault("LANG", "C.UTF-8")
        env.update(
            HOME=self.inside_home,
            TMPDIR=self.inside_tmp,
            TERM="dumb",
            PAGER="cat",
            GIT_PAGER="cat",
            DEBIAN_FRONTEND="noninteractive",
            PIP_NO_INPUT="1",
            CI="true",
            TERMINUS_WORKSPACE=self.inside_workspace,
        )
        # Toolchain managers installed in the harness user's home keep working when HOME moves.
        for var, folder in TOOLCHAIN_HOMES.items():
            if var in os.environ:
                env[var] = os.environ[var]
            elif (Path.home() / folder).is_dir():
                env[var] = str(Path.home() / folder)
        env.update(self.limits.extra_env)
        if isinstance(self.tracker, EnvMarker):
            env[MARKER_VAR] = self.tracker.value
        return env

    @property
    def inside_home(self) -> str:
        return str(self.ws.home)

    @property
    def inside_state(self) -> str:  # type: ignore[override]
        return str(self.ws.state)

    @property
    def inside_control(self) -> str:  # type: ignore[override]
        return str(self.ws.control)

    @property
    def inside_tmp(self) -> str:
        return str(self.ws.tmp)

    def _launch(self) -> subprocess.Popen:
        argv = self.argv()
        if isinstance(self.tracker, PidsCgroup):
            # Join the cgroup before bash exists, so nothing the command does can start outside it.
            argv = ["/bin/sh", "-c", 'echo $$ > "$0" && exec "$@"', str(self.tracker.procs_file), *argv]
        return subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            env=self.env(),
            cwd=self.ws.root,
            start_new_session=True,
            close_fds=True,
        )

    def run(self, command: str, timeout_s: float) -> CommandResult:
        timeout_s = self._stage(command, timeout_s)
        collector = OutputCollector(self.limits.output_head_bytes, self.limits.output_tail_bytes)
        start = time.monotonic()
        proc = self._launch()
        if self._closed:  # closed from another thread (a cancelled MCP call) while this command was starting
            self._kill_tree(proc)
        self._leftovers = 0
        deadline = start + timeout_s
        timed_out, capped = self._pump(proc, collector, deadline)
        try:  # EOF can come long before the exit: a command may close its output and go on
            exit_code = proc.wait(timeout=max(0.0, deadline - time.monotonic()) + (2.0 if timed_out else 0.0))
        except subprocess.TimeoutExpired:
            timed_out = True
            self._kill_tree(proc)
            exit_code = proc.wait()
        duration = time.monotonic() - start
        leftovers = self._leftovers + self._kill_tree(proc)
        return self._result(command, collector, duration, exit_code, timed_out, capped, leftovers)

    def _pump(self, proc: subprocess.Popen, collector: OutputCollector, deadline: float) -> tuple[bool, bool]:
        """Read output until EOF, the deadline or the output cap; returns (timed_out, capped)."""
        assert proc.stdout is not None
        fd = proc.stdout.fileno()
        os.set_blocking(fd, False)
        sel = selectors.DefaultSelector()
        sel.register(fd, selectors.EVENT_READ, "out")
        pidfd = os.pidfd_open(proc.pid)
        sel.register(pidfd, selectors.EVENT_READ, "exit")
        timed_out = capped = False
        grace: float | None = None  # once the main process is gone, how long we still wait for EOF
        try:
            while True:
                now = time.monotonic()
                limit = grace if grace is not None else deadline
                if now >= limit:
                    if grace is None:
                        timed_out = True
                        self._kill_tree(proc)
                        grace = now + 2.0
                        continue
                    break
                for key, _ in sel.select(timeout=limit - now):
                    if key.data == "exit":
                        sel.unregister(pidfd)
                        # Daemons may hold the pipe open: kill them so EOF comes, and stop waiting soon.
                        self._leftovers += self._kill_tree(proc)
                        grace = time.monotonic() + 1.0
                        continue
                    try:
                        chunk = os.read(fd, 1 << 16)
                    except BlockingIOError:
                        continue
                    if not chunk:
                        return timed_out, capped
                    collector.feed(chunk)
                    if collector.total > self.limits.max_output_bytes and not capped:
                        capped = True
                        self._kill_tree(proc)
                        grace = time.monotonic() + 2.0
        finally:
            sel.close()
            os.close(pidfd)
            proc.stdout.close()
        return timed_out, capped

    def _kill_tree(self, proc: subprocess.Popen) -> int:
        """Kill the command and whatever it left running. The process-group kill comes first: it is atomic with
        respect to fork, so a fork bomb that never left the group dies at once, whatever the tracker."""
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
        return self.tracker.kill_all()

    def _release(self) -> None:
        self.tracker.remove()
