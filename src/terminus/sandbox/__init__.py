"""Where commands run. One protocol (`Sandbox.run(command, timeout_s) -> CommandResult`, `read_file`, `write_file`,
`list_files`, `close()`), four backends: local, bwrap, docker, apptainer. See README's "Sandboxes" for what each
does and does not isolate."""

from __future__ import annotations

from pathlib import Path

from terminus.sandbox.base import CommandResult, Limits, Sandbox
from terminus.sandbox.bwrap import bwrap_path
from terminus.sandbox.errors import OutsideWorkspaceError, SandboxError

BACKENDS = ("local", "bwrap", "docker", "apptainer")


def default_backend() -> str:
    """bwrap where bubblewrap exists, else local."""
    return "bwrap" if bwrap_path() else "local"


def make_sandbox(
    backend: str | None,
    source: Path | None = None,
    limits: Limits | None = None,
    network: bool = False,
    copy: str = "git",
    max_copy_bytes: int | None = None,
    **options,
) -> Sandbox:
    """Create a sandbox of the named backend over a copy of `source`.

    `copy` is how the repository is copied (`git`: the files git sees; `all`: every file; see `copying`).
    `max_copy_bytes` caps a folder copied whole (not a git work tree, or `all`): over it, CopyTooLargeError (a
    SandboxError) and nothing is copied; None (the default, for terminus's own task snapshots): no cap.
    `options` are backend-specific: `image` (docker, apptainer), `base_url` (docker), `binds` (docker, and bwrap's
    read-only host paths: `PATH` or `HOST:INSIDE[:ro]`).
    """
    backend = backend or default_backend()
    if backend == "local":
        from terminus.sandbox.local import LocalSandbox

        return LocalSandbox(source, limits, network, copy=copy, max_copy_bytes=max_copy_bytes)
    if backend == "bwrap":
        from terminus.sandbox.bwrap import BwrapSandbox

        binds = options.get("binds")
        return BwrapSandbox(source, limits, network, copy=copy, max_copy_bytes=max_copy_bytes, binds=binds)
    if backend == "docker":
        from terminus.sandbox.docker import DockerSandbox

        return DockerSandbox(source, limits, network, copy=copy, max_copy_bytes=max_copy_bytes, **options)
    if backend == "apptainer":
        from terminus.sandbox.apptainer import ApptainerSandbox

        return ApptainerSandbox(source, limits, network, copy=copy, max_copy_bytes=max_copy_bytes, **options)
    raise SandboxError(f"unknown sandbox backend {backend!r}; choose one of {', '.join(BACKENDS)}")


__all__ = [
    "BACKENDS",
    "CommandResult",
    "Limits",
    "OutsideWorkspaceError",
    "Sandbox",
    "SandboxError",
    "default_backend",
    "make_sandbox",
]
