"""The sandbox contract: what every backend gives its callers (`Sandbox`), the record of one command
(`CommandResult`) and the limits every command runs under (`Limits`). Callers use this and nothing of a backend's
own; `workspace.SandboxBase` is the implementation all backends share, `process` the engine of those whose command
is a local process."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Protocol, runtime_checkable


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
    host_tmp: Path
    """The commands' temp folder (their $TMPDIR) as the harness sees it: where a command leaves a file too large
    for its output (a test log, a diff) for the host to read through `hostfs`, which follows no link planted there."""

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

    def hidden_host_paths(self, log: str) -> list[str]:
        """Host paths that a failed command's `log` names (or its PATH holds) which exist on the host but which
        this sandbox hides from commands (bwrap's private /tmp and /home), so that an error can say which to bind;
        [] where nothing the host has is hidden that way."""
        ...

    def close(self) -> None: ...

    def __enter__(self) -> Sandbox: ...

    def __exit__(self, *exc) -> None: ...
