"""Where a run's commands execute, as plain values: the backend, the image of the tasks that bring none, extra
read-only binds and the Docker engine. Each entry point builds one `SandboxSpec` (`runspec.load_run` from the
config, a CLI command from its flags) and hands it down as an argument; `make_sandbox` makes sandboxes of it.

The sandbox owns this record so that it depends on no experiment config: this module imports nothing of terminus
but the sandbox's own errors."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

from terminus.sandbox.errors import SandboxError
from terminus.sandbox.pull import Pull, pull_mode


class Backend(StrEnum):
    """The backends, by the names configs and `--sandbox` use (the CLI's choices). Each has its class in its own
    module, named once in `terminus.sandbox.BACKENDS`."""

    LOCAL = "local"
    BWRAP = "bwrap"
    DOCKER = "docker"
    APPTAINER = "apptainer"

    @property
    def runs_image(self) -> bool:
        """Commands run in an image (the spec's, or a task's own); local and bwrap run the host's own system."""
        return self in (Backend.DOCKER, Backend.APPTAINER)

    @property
    def takes_binds(self) -> bool:
        """Extra read-only binds reach the commands: bwrap hides the host's /tmp and /home, docker shows nothing of
        the host unless bound. local sees the host as it is; apptainer takes none here."""
        return self in (Backend.BWRAP, Backend.DOCKER)


def backend_named(name: str) -> Backend:
    """The backend called `name`; SandboxError naming the choices for any other."""
    try:
        return Backend(name)
    except ValueError:
        raise SandboxError(f"unknown sandbox backend {name!r}; choose one of {', '.join(Backend)}") from None


def apptainer_image(image: str) -> str:
    """A dataset row's image for apptainer: a registry reference (what rows name) as `docker://REF`; a .sif file or
    a reference with its own scheme as it is."""
    return image if "://" in image or image.endswith(".sif") else f"docker://{image}"


@dataclass(frozen=True)
class SandboxSpec:
    """Where commands run: the backend (None: bwrap where installed, else local), the image of the tasks that
    bring none (docker: None is the registry-free host image; apptainer needs one), extra read-only binds
    (`PATH` or `HOST:INSIDE[:ro]`), docker's engine (None: DOCKER_HOST or the default socket), and when docker pulls
    an image (`pull`: missing, always, never; `terminus.sandbox.pull`)."""

    backend: Backend | None = None
    image: str | None = None
    binds: tuple[str, ...] = ()
    docker_url: str | None = None
    pull: Pull = Pull.MISSING

    def __post_init__(self) -> None:
        # A name from a config or a flag becomes the Backend (an unknown one is refused here, where it is given).
        if self.backend is not None:
            object.__setattr__(self, "backend", backend_named(self.backend))
        object.__setattr__(self, "binds", tuple(self.binds))
        object.__setattr__(self, "pull", pull_mode(self.pull))  # None (no flag, no config key): missing

    @property
    def runs_image(self) -> bool:
        return self.backend is not None and self.backend.runs_image

    def for_task(self, image: str | None = None, binds: Sequence[str] = ()) -> SandboxSpec:
        """The spec for one task or SWE instance, which may bring its own environment (manifest and
        real-repository tasks):

        - `image`, the task's image, replaces the spec's on the backends that run one (apptainer reads a row's
          registry reference as `docker://REF`); a task without one gets the spec's (docker: the host image).
        - `binds`, host paths the task's tests need (a row's `binds`: an interpreter, a toolchain), join the spec's,
          first and each once, where binds reach the commands (bwrap, docker, and the default backend, which may be
          bwrap); local needs none and apptainer takes none.
        """
        changes: dict = {}
        if image and self.runs_image:
            changes["image"] = apptainer_image(image) if self.backend is Backend.APPTAINER else image
        if binds and (self.backend is None or self.backend.takes_binds):
            changes["binds"] = tuple(dict.fromkeys([*binds, *self.binds]))
        return dataclasses.replace(self, **changes) if changes else self
