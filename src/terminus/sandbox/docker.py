"""`docker`: one container per episode through the Docker SDK, no network, memory/pids/cpu limits.

Each command is a `docker exec` of the same bash wrapper as the other backends. Killing the client does
not stop what runs inside a container, so a timeout kills the container itself (and the next command
starts it again: the workspace and shell state live in bind mounts and survive). After every command the
wrapper kills all processes but the container's init, so nothing outlives the command.
"""

from __future__ import annotations

import contextlib
import logging
import queue
import threading
import time
from pathlib import Path

from terminus.sandbox.base import (
    INSIDE_CONTROL,
    INSIDE_STATE,
    CommandResult,
    Limits,
    SandboxBase,
    SandboxError,
    Workspace,
)
from terminus.sandbox.output import OutputCollector

log = logging.getLogger(__name__)

WORKSPACE = "/workspace"
HOME = "/home/sandbox"
HOST_IMAGE = "terminus-sandbox:host"
# What the registry-free image (docker/sandbox/Dockerfile) borrows from the host, read-only.
HOST_BINDS = [
    "/usr:/usr:ro",
    "/etc/alternatives:/etc/alternatives:ro",
    "/etc/ld.so.cache:/etc/ld.so.cache:ro",
    "/etc/passwd:/etc/passwd:ro",
    "/etc/group:/etc/group:ro",
    "/etc/ssl:/etc/ssl:ro",
]


def default_image(backend: str) -> str:
    """The image for tasks that bring none and callers that pass none (the config's `sandbox_image` is passed down
    as `image`): for docker the project's registry-free image (docker/sandbox). Apptainer has no such default on a
    cluster."""
    if backend == "docker":
        return HOST_IMAGE
    raise SandboxError(
        f"the {backend} sandbox needs an image for tasks that bring none: set `sandbox_image` in the config, "
        "e.g. docker://python:3.11 or a .sif file"
    )


class DockerSandbox(SandboxBase):
    name = "docker"
    inside_workspace = WORKSPACE
    inside_state = INSIDE_STATE
    inside_control = INSIDE_CONTROL

    def __init__(
        self,
        source: Path | None = None,
        limits: Limits | None = None,
        network: bool = False,
        *,
        image: str | None = None,
        base_url: str | None = None,
        binds: list[str] | None = None,
        memory_mb: int = 8192,
        cpus: float = 2.0,
        copy: str = "git",
        max_copy_bytes: int | None = None,
    ) -> None:
        try:
            import docker
        except ImportError as err:  # pragma: no cover - docker is a dependency
            raise SandboxError("the docker Python package is missing: pip install docker") from err
        self.limits = limits or Limits()
        image = image or default_image("docker")
        if image == HOST_IMAGE and binds is None:
            binds = HOST_BINDS  # that image is an empty root: it runs the host's read-only /usr
        try:
            self.client = docker.DockerClient(base_url=base_url) if base_url else docker.from_env()
            self.client.ping()
        except Exception as err:
            raise SandboxError(
                f"cannot reach the Docker engine at {base_url or 'DOCKER_HOST/default socket'}: {err}"
            ) from err
        try:
            self.client.images.get(image)
        except Exception as err:
            raise SandboxError(
                f"docker image {image!r} is not present locally (build it; no registry is used)"
            ) from err
        self.ws = Workspace(source, copy=copy, max_copy_bytes=max_copy_bytes)
        self.workspace = self.ws.repo
        # Kill everything in the container but its init: no daemon outlives the command.
        self._prepare_folders(epilogue="kill -9 -1 2>/dev/null")
        volumes = {
            str(self.ws.repo): {"bind": WORKSPACE, "mode": "rw"},
            str(self.ws.state): {"bind": INSIDE_STATE, "mode": "rw"},
            str(self.ws.control): {"bind": INSIDE_CONTROL, "mode": "ro"},
            str(self.ws.home): {"bind": HOME, "mode": "rw"},
            str(self.ws.tmp): {"bind": "/tmp", "mode": "rw"},
        }
        for bind in binds or []:
            host, _, rest = bind.partition(":")
            inside, _, mode = rest.partition(":")
            volumes[host] = {"bind": inside or host, "mode": mode or "ro"}
        env = {"HOME": HOME, "TMPDIR": "/tmp", "TERM": "dumb", "PAGER": "cat", "CI": "true"}
        env |= {"TERMINUS_WORKSPACE": WORKSPACE, "DEBIAN_FRONTEND": "noninteractive", **self.limits.extra_env}
        self.container = self.client.containers.create(
            image,
            # An init of our own (docker-init is not always installed): bash reaps the orphans that the
            # wrapper's `kill -9 -1` leaves, so zombies never count against the pids limit.
            # The entrypoint is ours too: images whose ENTRYPOINT is already bash (SWE-Bench Pro's) would
            # otherwise run `bash /bin/bash -c ...` and exit at once.
            entrypoint=["/bin/bash"],
            command=["-c", "trap 'exit 0' TERM; while :; do sleep 3600 & wait $!; done"],
            detach=True,
            network_mode="bridge" if network else "none",
            mem_limit=f"{memory_mb}m",
            memswap_limit=f"{memory_mb}m",
            pids_limit=self.limits.processes or -1,
            nano_cpus=int(cpus * 1e9),
            volumes=volumes,
            working_dir=WORKSPACE,
            environment=env,
            labels={"terminus.sandbox": "1"},
            # Root in the container writes into host folders (the binds): no device nodes there, no setuid gains.
            cap_drop=["MKNOD", "NET_RAW", "SYS_CHROOT", "SETFCAP", "AUDIT_WRITE"],
            security_opt=["no-new-privileges"],
        )
        self.container.start()
        self._closed = False

    def _ensure_running(self) -> None:
        self.container.reload()
        if self.container.status != "running":
            self.container.start()

    def run(self, command: str, timeout_s: float) -> CommandResult:
        timeout_s = self._stage(command, timeout_s)
        self._ensure_running()
        api = self.client.api
        exec_id = api.exec_create(self.container.id, self.wrapper_argv())["Id"]
        collector = OutputCollector(self.limits.output_head_bytes, self.limits.output_tail_bytes)
        chunks: queue.Queue[bytes | None] = queue.Queue()

        def pump() -> None:
            try:
                for chunk in api.exec_start(exec_id, stream=True):
                    chunks.put(chunk)
            except Exception as err:  # the stream breaks when the container is killed
                log.debug("exec stream ended: %s", err)
            finally:
                chunks.put(None)

        start = time.monotonic()
        reader = threading.Thread(target=pump, daemon=True)
        reader.start()
        deadline = start + timeout_s
        timed_out = capped = False
        while True:
            try:
                chunk = chunks.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                timed_out = True
                self._kill()
                deadline = time.monotonic() + 5.0
                continue
            if chunk is None:
                break
            collector.feed(chunk)
            if collector.total > self.limits.max_output_bytes and not capped:
                capped = True
                self._kill()
        reader.join(timeout=5)
        duration = time.monotonic() - start
        exit_code = None
        if not timed_out:
            with contextlib.suppress(Exception):
                exit_code = api.exec_inspect(exec_id).get("ExitCode")
        return self._result(command, collector, duration, exit_code, timed_out, capped)

    def _kill(self) -> None:
        with contextlib.suppress(Exception):
            self.container.kill()

    def _release(self) -> None:
        with contextlib.suppress(Exception):
            self.container.remove(force=True)
