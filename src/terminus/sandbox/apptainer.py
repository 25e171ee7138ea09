"""`apptainer`: for HPC nodes without Docker. Runs each command in `apptainer exec` from a .sif file or a
docker image reference, with a contained, clean environment and a writable tmpfs overlay."""

from __future__ import annotations

import shutil

from terminus.sandbox.docker import default_image
from terminus.sandbox.errors import SandboxError
from terminus.sandbox.process import ProcessSandbox
from terminus.sandbox.workspace import INSIDE_CONTROL, INSIDE_STATE

WORKSPACE = "/workspace"


def apptainer_path() -> str | None:
    return shutil.which("apptainer") or shutil.which("singularity")


class ApptainerSandbox(ProcessSandbox):
    name = "apptainer"
    inside_workspace = WORKSPACE
    inside_state = INSIDE_STATE
    inside_control = INSIDE_CONTROL

    def __init__(self, *args, image: str | None = None, **kwargs) -> None:
        if apptainer_path() is None:
            raise SandboxError("apptainer (or singularity) is not on PATH; it is installed on HPC nodes, not here")
        self.image = image or default_image("apptainer")
        super().__init__(*args, **kwargs)

    @classmethod
    def from_spec(cls, spec, source, limits, network, **sizes):
        if spec.binds:
            raise SandboxError(f"the apptainer sandbox takes no extra binds here (given {', '.join(spec.binds)})")
        return cls(source, limits, network, image=spec.image, **sizes)

    @property
    def inside_home(self) -> str:
        return "/home/sandbox"

    @property
    def inside_tmp(self) -> str:
        return "/tmp"

    def argv(self) -> list[str]:
        argv = [
            apptainer_path() or "apptainer",
            "exec",
            "--contain",
            "--cleanenv",
            "--writable-tmpfs",
            "--pid",
            "--no-home",
            "--home",
            f"{self.ws.home}:/home/sandbox",
            "--bind",
            f"{self.ws.repo}:{WORKSPACE}",
            "--bind",
            f"{self.ws.state}:{INSIDE_STATE}",
            "--bind",
            f"{self.ws.control}:{INSIDE_CONTROL}:ro",
            "--bind",
            f"{self.ws.tmp}:/tmp",
            "--pwd",
            WORKSPACE,
        ]
        if not self.network:
            argv += ["--net", "--network", "none"]
        # --cleanenv drops the host environment; pass ours explicitly.
        for key, value in self.env().items():
            argv += ["--env", f"{key}={value}"]
        return [*argv, self.image, *self.wrapper_argv()]
