"""The sandbox's errors (their own module, so that every sandbox module may raise them)."""

from __future__ import annotations

from terminus.errors import TerminusError


class SandboxError(TerminusError, RuntimeError):
    """The sandbox cannot be created or used (missing binary, bad image, no daemon)."""


class OutsideWorkspaceError(SandboxError, ValueError):
    """A file operation named a path outside the workspace; nothing was read or written."""
