"""Where commands run. One protocol (`Sandbox.run(command, timeout_s) -> CommandResult`, `read_file`, `write_file`,
`list_files`, `close()`), four backends: local, bwrap, docker, apptainer. See README's "Sandboxes" for what each
does and does not isolate."""

from __future__ import annotations

from pathlib import Path

from terminus.runspec import SandboxSpec
from terminus.sandbox.apptainer import ApptainerSandbox
from terminus.sandbox.base import CommandResult, Limits, Sandbox
from terminus.sandbox.bwrap import BwrapSandbox, bwrap_path
from terminus.sandbox.docker import DockerSandbox
from terminus.sandbox.errors import OutsideWorkspaceError, SandboxError
from terminus.sandbox.local import LocalSandbox

BACKENDS = ("local", "bwrap", "docker", "apptainer")


def default_backend() -> str:
    """bwrap where bubblewrap exists, else local."""
    return "bwrap" if bwrap_path() else "local"


def make_sandbox(
    spec: SandboxSpec,
    source: Path | None = None,
    limits: Limits | None = None,
    network: bool = False,
    copy: str = "git",
    max_copy_bytes: int | None = None,
    **engine,
) -> Sandbox:
    """Create a sandbox of `spec` (backend, image, binds: `terminus.runspec.SandboxSpec`) over a copy of `source`.

    `copy` is how the repository is copied (`git`: the files git sees; `all`: every file; see `copying`).
    `max_copy_bytes` caps a folder copied whole (not a git work tree, or `all`): over it, CopyTooLargeError (a
    SandboxError) and nothing is copied; None (the default, for terminus's own task snapshots): no cap.
    `engine`: docker's `base_url` (the Docker engine to use).
    """
    backend = spec.backend or default_backend()
    binds = list(spec.binds) or None
    sizes = {"copy": copy, "max_copy_bytes": max_copy_bytes}
    if backend == "local":
        return LocalSandbox(source, limits, network, **sizes)
    if backend == "bwrap":
        return BwrapSandbox(source, limits, network, binds=binds, **sizes)
    if backend == "docker":
        return DockerSandbox(source, limits, network, image=spec.image, binds=binds, **sizes, **engine)
    if backend == "apptainer":
        if binds:
            raise SandboxError(f"the apptainer sandbox takes no extra binds here (given {', '.join(binds)})")
        return ApptainerSandbox(source, limits, network, image=spec.image, **sizes)
    raise SandboxError(f"unknown sandbox backend {backend!r}; choose one of {', '.join(BACKENDS)}")


__all__ = [
    "BACKENDS",
    "CommandResult",
    "Limits",
    "OutsideWorkspaceError",
    "Sandbox",
    "SandboxError",
    "SandboxSpec",
    "default_backend",
    "make_sandbox",
]
