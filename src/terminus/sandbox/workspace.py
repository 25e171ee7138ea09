"""What every backend shares: the workspace (a private copy of the repository and the folders next to it), the
bash wrapper that carries the shell state from one command to the next, and `SandboxBase`, the lifecycle and file
operations of every backend.

Every command runs in a fresh `bash` that first restores the working directory and exported variables the
previous command left, and saves them when it exits, so `cd build` then `make` works as in a real terminal. Files
are read, written and listed through the same channel (`files`), so callers see them as the commands do, in an
image too.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from terminus.sandbox import files, hostfs
from terminus.sandbox.copying import COPY_MODES, copy_repository
from terminus.sandbox.errors import SandboxError
from terminus.sandbox.fdtree import remove_tree
from terminus.sandbox.output import OutputCollector
from terminus.sandbox.protocol import CommandResult, Limits
from terminus.sandbox.tmproot import run_root

if TYPE_CHECKING:
    from terminus.sandbox.spec import SandboxSpec

# Where the isolating backends (bwrap, docker, apptainer) bind the shell-state folder (writable) and the control
# folder (read-only) inside.
INSIDE_STATE = "/run/terminus"
INSIDE_CONTROL = "/run/terminus-control"


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

    @classmethod
    def from_spec(cls, spec: SandboxSpec, source: Path | None, limits: Limits | None, network: bool, **sizes):
        """A sandbox of this backend for `spec`, taking what of it this backend uses (its image, binds, engine);
        `sizes`: how the repository is copied (`copy`, `max_copy_bytes`). `make_sandbox` calls this."""
        raise NotImplementedError

    @property
    def host_tmp(self) -> Path:
        return self.ws.tmp

    def hidden_host_paths(self, log: str) -> list[str]:
        return []

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
