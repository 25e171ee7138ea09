"""The sandbox protocol, its result record, limits, and the machinery shared by process-based backends.

A sandbox owns one workspace (a copy of a repository) for one episode. Every command runs in a fresh
`bash` that first restores the working directory and exported variables the previous command left, and
saves them when it exits, so `cd build` then `make` works as in a real terminal. Files are read, written and
listed through the same channel (`files`), so callers see them as the commands do, in an image too.
"""

from __future__ import annotations

import contextlib
import logging
import os
import selectors
import signal
import subprocess
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Protocol, runtime_checkable

from terminus.sandbox import files, hostfs
from terminus.sandbox.copying import COPY_MODES, copy_repository
from terminus.sandbox.errors import SandboxError
from terminus.sandbox.fdtree import remove_tree
from terminus.sandbox.output import OutputCollector
from terminus.sandbox.procs import MARKER_VAR, EnvMarker, PidsCgroup, make_tracker
from terminus.sandbox.tmproot import run_root

log = logging.getLogger(__name__)

# Only these variables of the harness reach a command: API keys, tokens and cluster credentials never do.
ENV_ALLOWLIST = ("PATH", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "USER", "LOGNAME")
# Where rustup and pyenv keep their toolchains; read-only use is enough, so they are passed through.
TOOLCHAIN_HOMES = {"RUSTUP_HOME": ".rustup", "PYENV_ROOT": ".pyenv"}
# Where the isolating backends (bwrap, docker, apptainer) bind the shell-state folder (writable) and the control
# folder (read-only) inside.
INSIDE_STATE = "/run/terminus"
INSIDE_CONTROL = "/run/terminus-control"


@dataclass
class CommandResult:
    """What one command did. `output` is stdout and stderr interleaved, normalised, head and tail kept."""

    command: str
    output: str
    exit_code: int | None
    duration_s: float
    timed_out: bool = False
    truncated: bool = False
    output_bytes: int = 0
    elided_bytes: int = 0
    output_capped: bool = False
    leftover_processes: int = 0

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass
class Limits:
    """Resource limits applied to every command. None switches a limit off."""

    address_space_mb: int | None = 16384
    """RLIMIT_AS: virtual memory per process. JVMs reserve a lot of address space; keep it generous."""
    cpu_time_s: int | None = 900
    """RLIMIT_CPU: CPU seconds per process, a backstop behind the wall-clock timeout."""
    processes: int | None = 1024
    """pids cgroup limit (and RLIMIT_NPROC, which binds only non-root users)."""
    file_size_mb: int | None = 1024
    """RLIMIT_FSIZE: the largest file a command may write."""
    max_timeout_s: float = 1800.0
    """Timeouts asked for are capped at this."""
    output_head_bytes: int = 5000
    output_tail_bytes: int = 5000
    max_output_bytes: int = 256 * 1024 * 1024
    """A command that writes more than this is killed (e.g. `yes`); what was kept is returned."""
    extra_env: dict[str, str] = field(default_factory=dict)
    """Variables set in every command's environment on top of the allowlist."""


@runtime_checkable
class Sandbox(Protocol):
    """What every backend gives its callers, and all that they may use."""

    name: str
    """The backend's name (local, bwrap, docker, apptainer); trajectories record it."""
    workspace: Path
    """The workspace as the harness sees it (a host folder)."""
    inside_workspace: str
    """The same folder as the commands see it (what prompts name)."""

    def run(self, command: str, timeout_s: float) -> CommandResult: ...

    def read_file(self, path: str, errors: str = "strict") -> str:
        """The file's text (UTF-8; `errors` as for bytes.decode). `path` is relative to the workspace or absolute
        as the commands see it. Raises OutsideWorkspaceError when it leads outside the workspace (`..`, another
        absolute path, a symbolic link), FileNotFoundError, IsADirectoryError, OSError (with the reason)."""
        ...

    def read_file_ends(self, path: str, keep: int) -> tuple[bytes, int]:
        """(bytes, the file's size): the whole file when it is at most `keep` bytes, else its first and last
        `keep // 2` bytes; the rest is never copied out. The same errors as `read_file`."""
        ...

    def write_file(self, path: str, text: str) -> None:
        """Create or replace the file with `text`, byte for byte (its folder must exist); the same errors."""
        ...

    def list_files(self, path: str = ".") -> list[str]:
        """Every entry below the folder that is not a folder, relative to it, sorted; NotADirectoryError for a file."""
        ...

    def close(self) -> None: ...

    def __enter__(self) -> Sandbox: ...

    def __exit__(self, *exc) -> None: ...


WRAPPER = r"""# terminus: runs one command with the shell state the previous one left.
# $1: the control folder (read-only inside: this script, the command); $2: the shell-state folder (cwd, env).
__t_control="$1"
__t_state="$2"
{ZULIMITS}
if [ -f "$__t_state/env" ]; then . "$__t_state/env" >/dev/null 2>&1; fi
if [ -f "$__t_state/cwd" ]; then read -r __t_cwd < "$__t_state/cwd"; cd "$__t_cwd" 2>/dev/null; fi
__t_save() {
  __t_rc=$?
  { pwd > "$__t_state/cwd"; export -p > "$__t_state/env"; } 2>/dev/null
  {ZEPILOGUE}
  exit $__t_rc
}
trap __t_save EXIT
exec 2>&1 </dev/null
unset __t_cwd
. "$__t_control/command"
"""


def render_wrapper(limits: Limits, epilogue: str = "") -> str:
    ulimits = []
    if limits.address_space_mb:
        ulimits.append(f"ulimit -v {limits.address_space_mb * 1024}")
    if limits.cpu_time_s:
        ulimits.append(f"ulimit -t {limits.cpu_time_s}")
    if limits.processes:
        ulimits.append(f"ulimit -u {limits.processes}")
    if limits.file_size_mb:
        ulimits.append(f"ulimit -f {limits.file_size_mb * 1024}")  # bash counts 1024-byte blocks
    body = " 2>/dev/null; ".join(ulimits) + " 2>/dev/null" if ulimits else ":"
    return WRAPPER.replace("{ZULIMITS}", body).replace("{ZEPILOGUE}", epilogue or ":")


class Workspace:
    """A private copy of a repository plus the folders a sandbox needs next to it.

    The command can write `repo`, `home`, `tmp` and `state` (its shell state: cwd, exported variables, files it hands
    back); `control` (the wrapper, the command, files handed in) is written by the host alone and bound read-only
    inside, so nothing the command plants there is ever followed by the host's next write. `root`, their parent, is
    never bound inside. Host-side access below the writable folders goes through `hostfs` (docs/ARCHITECTURE.md, "The
    sandbox boundary").

    `copy`: `git` copies the files git sees (tracked, and untracked but not ignored) when the source is a git work
    tree, else everything; `all` copies everything. Special files are skipped and listed in `skipped`. The folder
    lives under this process's temp root (`tmproot`), which a later run removes if this one is killed.

    `owner` (uid, gid): who the command runs as when that is not the harness's user (bwrap under root): the writable
    folders and the copy are made over to it, `control` stays the host's.
    """

    def __init__(
        self,
        source: Path | None,
        root: Path | None = None,
        copy: str = "git",
        max_copy_bytes: int | None = None,
        owner: tuple[int, int] | None = None,
    ) -> None:
        if source is not None and not Path(source).is_dir():  # checked first: no empty temp folder is left
            raise SandboxError(f"repository folder {source} does not exist or is not a folder")
        if copy not in COPY_MODES:
            raise SandboxError(f"copy mode {copy!r}: choose one of {', '.join(COPY_MODES)}")
        self.root = Path(tempfile.mkdtemp(prefix="ws-", dir=root or run_root()))
        self.repo = self.root / "workspace"
        self.home = self.root / "home"
        self.tmp = self.root / "tmp"
        self.state = self.root / "state"
        self.control = self.root / "control"
        self.skipped: list[str] = []
        self.owner = owner
        try:
            if source is not None:
                self.skipped = copy_repository(Path(source), self.repo, copy, max_copy_bytes, owner=owner)
            else:
                self.repo.mkdir()
            for folder in (self.home, self.tmp, self.state, self.control):
                folder.mkdir()
            for folder in (self.repo, self.home, self.tmp, self.state) if owner else ():
                os.chown(folder, *owner, follow_symlinks=False)  # folders the host just made: nothing to follow
        except OSError as err:
            self.remove()
            raise SandboxError(f"cannot copy {source} into a workspace: {err}") from err
        except BaseException:
            self.remove()
            raise

    def remove(self) -> None:
        remove_tree(self.root)  # never raises: a tree the sandbox made too deep or odd is logged, not fatal


def stage_command(ws: Workspace, limits: Limits, closed: bool, command: str, timeout_s: float) -> float:
    """Check a command, write it where the wrapper reads it, and return the capped timeout (all backends)."""
    if closed:
        raise SandboxError("the sandbox is closed")
    if not isinstance(command, str) or not command.strip():
        raise ValueError("command must be a non-empty string")
    hostfs.write_text(ws.control, "command", command + "\n")
    return max(0.1, min(float(timeout_s), limits.max_timeout_s))


class SandboxBase(files.FileAccess):
    """What every backend shares: staging a command, the result record, the file operations (through `run`), and
    the lifecycle (close once; the backend's own teardown, then the workspace). Subclasses set `ws`, `limits`,
    `_closed`, give `run()` and `_release()`, and name the workspace and state folders as the command sees them."""

    name = "base"
    inside_workspace: str  # the workspace path as the command sees it
    inside_state: str  # the shell-state folder (`ws.state`, writable) as the command sees it: files handed back
    inside_control: str  # the control folder (`ws.control`, read-only inside): wrapper, command, files handed in

    def _prepare_folders(self, epilogue: str = "") -> None:
        """The wrapper into the control folder, the first working directory into the shell state."""
        hostfs.write_text(self.ws.control, "wrapper.sh", render_wrapper(self.limits, epilogue))
        hostfs.write_text(self.ws.state, "cwd", self.inside_workspace + "\n", owner=self.ws.owner)

    def wrapper_argv(self) -> list[str]:
        """bash running the wrapper, as the command sees the two folders."""
        wrapper = f"{self.inside_control}/wrapper.sh"
        return ["/bin/bash", "--noprofile", "--norc", wrapper, self.inside_control, self.inside_state]

    def _stage(self, command: str, timeout_s: float) -> float:
        return stage_command(self.ws, self.limits, self._closed, command, timeout_s)

    @staticmethod
    def _result(
        command: str,
        collector: OutputCollector,
        duration: float,
        exit_code: int | None,
        timed_out: bool,
        capped: bool,
        leftovers: int = 0,
    ) -> CommandResult:
        cut = collector.cut()
        return CommandResult(
            command=command,
            output=cut.text,
            # A command killed at the time limit or the output cap has no exit status of its own: whatever the
            # killed process tree reported (bwrap can exit 0 when its child dies) must never read as a success.
            exit_code=None if timed_out or capped else exit_code,
            duration_s=round(duration, 4),
            timed_out=timed_out,
            truncated=cut.elided_bytes > 0,
            output_bytes=collector.total,
            elided_bytes=cut.elided_bytes,
            output_capped=capped,
            leftover_processes=leftovers,
        )

    def _release(self) -> None:
        """The backend's own teardown (cgroup, container), before the workspace goes."""

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._release()
        self.ws.remove()

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()


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
