"""Where commands run. One protocol (`Sandbox.run(command, timeout_s) -> CommandResult`, `read_file`, `write_file`,
`list_files`, `close()`), four backends: local, bwrap, docker, apptainer. See docs/use.md's "Sandboxes" for what each
does and does not isolate."""

from __future__ import annotations

from pathlib import Path

from terminus.sandbox.apptainer import ApptainerSandbox
from terminus.sandbox.bwrap import BwrapSandbox, bwrap_path
from terminus.sandbox.docker import DockerSandbox
from terminus.sandbox.errors import OutsideWorkspaceError, SandboxError
from terminus.sandbox.local import LocalSandbox
from terminus.sandbox.protocol import CommandResult, Limits, Sandbox
from terminus.sandbox.spec import Backend, SandboxSpec
from terminus.sandbox.workspace import SandboxBase

# Each backend's class. A new backend is its own module (a SandboxBase with `from_spec`), its name in `Backend`, and
# one line here.
BACKENDS: dict[Backend, type[SandboxBase]] = {
    Backend.LOCAL: LocalSandbox,
    Backend.BWRAP: BwrapSandbox,
    Backend.DOCKER: DockerSandbox,
    Backend.APPTAINER: ApptainerSandbox,
}


def default_backend() -> Backend:
    """bwrap where bubblewrap exists, else local."""
    return Backend.BWRAP if bwrap_path() else Backend.LOCAL


def make_sandbox(
    spec: SandboxSpec,
    source: Path | None = None,
    limits: Limits | None = None,
    network: bool = False,
    copy: str = "git",
    max_copy_bytes: int | None = None,
) -> Sandbox:
    """Create a sandbox of `spec` (backend, image, binds, docker's engine: `SandboxSpec`) over a copy of `source`.

    `copy` is how the repository is copied (`git`: the files git sees; `all`: every file; see `copying`).
    `max_copy_bytes` caps a folder copied whole (not a git work tree, or `all`): over it, CopyTooLargeError (a
    SandboxError) and nothing is copied; None (the default, for terminus's own task snapshots): no cap.
    """
    backend = spec.backend or default_backend()
    return BACKENDS[backend].from_spec(spec, source, limits, network, copy=copy, max_copy_bytes=max_copy_bytes)


__all__ = [
    "BACKENDS",
    "Backend",
    "CommandResult",
    "Limits",
    "OutsideWorkspaceError",
    "Sandbox",
    "SandboxError",
    "SandboxSpec",
    "default_backend",
    "make_sandbox",
]
