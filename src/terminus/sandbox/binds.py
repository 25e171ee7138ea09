"""Extra host paths bound into a sandbox: one reading of `PATH` or `HOST:INSIDE[:ro]` for every backend.

Binds are read-only on every backend. A mode other than `ro` (docker's `rw`, `z`, `ro,z`, ...) is refused before
anything is created, naming the bind, so that a dataset row cannot give its tests a writable host folder on one
backend while the others refuse it. A bind's host path must be absolute and exist; a unix socket is refused (a
read-only bind does not stop `connect()`, so binding a socket would hand the command whatever serves it).

The host path is resolved on the host (links followed, here, once) and the resolved folder is what gets bound, seen
at the path as given: the backend never follows a link of its own on the host side. Links *inside* a bound folder
are read in the sandbox's own view of the files (its private /tmp and /home, the container's root), so they reach
nothing the sandbox does not already show. A bind may not cover the sandbox's own folders: `/`, the workspace or a
folder above it, or the harness's state and control folders (whose scripts run every command).
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass

from terminus.sandbox.errors import SandboxError
from terminus.sandbox.workspace import INSIDE_CONTROL, INSIDE_STATE

# Where the workspace is inside the sandboxes that take binds (bwrap, docker): a bind there, or above it, would hide
# the repository's copy.
INSIDE_WORKSPACE = "/workspace"


@dataclass(frozen=True)
class Bind:
    """A read-only bind: `host` (absolute, exists) seen at `inside` (absolute)."""

    host: str
    inside: str

    def docker(self) -> str:
        """The bind as docker's `HOST:INSIDE:ro`."""
        return f"{self.host}:{self.inside}:ro"


def parse_bind(spec: str) -> Bind:
    """`PATH` or `HOST:INSIDE[:ro]`; SandboxError naming the bind when it asks for another mode, a path is not
    absolute or has a `..` part, the host path does not exist, or it is a unix socket."""
    if not isinstance(spec, str):
        raise SandboxError(f"bind {spec!r}: give a path as text")
    host, _, rest = spec.partition(":")
    inside, _, mode = rest.partition(":")
    inside = inside or host
    if mode not in ("", "ro"):
        raise SandboxError(f"bind {spec}: binds are read-only on every backend (mode {mode!r} is not supported)")
    for path in (host, inside):
        if not path.startswith("/"):
            raise SandboxError(f"bind {spec}: give an absolute path")
        if ".." in path.split("/"):
            raise SandboxError(f"bind {spec}: {path} has a '..' part")
    inside = os.path.normpath(inside)
    owned = (INSIDE_STATE, INSIDE_CONTROL)
    if _covers(inside, INSIDE_WORKSPACE) or any(_covers(inside, f) or _covers(f, inside) for f in owned):
        raise SandboxError(f"bind {spec}: {inside} is the sandbox's own (the workspace, or the harness's folders)")
    try:
        info = os.stat(host)
    except OSError:
        raise SandboxError(f"bind {spec}: {host} does not exist on this machine") from None
    if stat.S_ISSOCK(info.st_mode):
        raise SandboxError(f"bind {spec}: {host} is a unix socket; a command could connect to it through the bind")
    return Bind(os.path.realpath(host), inside)


def _covers(folder: str, path: str) -> bool:
    """True when `folder` is `path` or a folder above it."""
    return folder == "/" or path == folder or path.startswith(folder.rstrip("/") + "/")


def parse_binds(specs: list[str] | tuple[str, ...] | None) -> list[Bind]:
    """Every bind of `specs`, in order, duplicates dropped; the first bad one raises."""
    return list(dict.fromkeys(parse_bind(spec) for spec in specs or ()))
