"""`docker`: one container per episode through the Docker SDK, no network, memory/pids/cpu limits.

Each command is a `docker exec` of the same bash wrapper as the other backends. Killing the client does
not stop what runs inside a container, so a timeout kills the container itself (and the next command starts it
again: the workspace and shell state live in bind mounts and survive). The wrapper's EXIT trap kills what the
command left, but the command can remove that trap or skip it with `exec`; so after every command the host
itself checks (`_settle`): it lists the container's processes with `docker top` (the host's `ps`, nothing the
container could replace) and kills the container if anything but its init is left. Then it clears the setuid
and setgid bits below the folders the command can write (`setid`): container root is root in those host
folders, and a setuid-root copy of a shell must not stay there. Nothing of the container's runs in that step,
so a program planted in the image (its `find`, its `bash`) cannot skip it.
"""

from __future__ import annotations

import contextlib
import logging
import queue
import threading
import time
from pathlib import Path

from terminus.sandbox.binds import parse_binds
from terminus.sandbox.errors import SandboxError
from terminus.sandbox.output import OutputCollector
from terminus.sandbox.protocol import CommandResult, Limits
from terminus.sandbox.pull import Pull, docker_client, ensure_image, one_line
from terminus.sandbox.setid import clear_setid
from terminus.sandbox.workspace import INSIDE_CONTROL, INSIDE_STATE, SandboxBase, Workspace

log = logging.getLogger(__name__)

WORKSPACE = "/workspace"
HOME = "/home/sandbox"
HOST_IMAGE = "terminus-sandbox:host"
# How often a command that writes nothing is checked for having ended (while what it left holds its output).
POLL_S = 0.5
# What the registry-free image (docker/sandbox/Dockerfile) borrows from the host, read-only.
HOST_BINDS = [
    "/usr:/usr:ro",
    "/etc/alternatives:/etc/alternatives:ro",
    "/etc/ld.so.cache:/etc/ld.so.cache:ro",
    "/etc/passwd:/etc/passwd:ro",
    "/etc/group:/etc/group:ro",
    "/etc/ssl:/etc/ssl:ro",
]
# The container's init: bash blocked in `read` on a pipe it holds both ends of. It has no child of its own, so
# every other process in the container is the command's, and it reaps the orphans that the kills leave, so
# zombies never count against the pids limit. (docker-init is not always installed.)
INIT = "exec 3<> <(:); trap 'exit 0' TERM; while :; do read -r -u 3 _; done"


def default_image(backend: str) -> str:
    """The image when the run's `SandboxSpec` names none (the config's `sandbox_image: null`, no --image): for
    docker the project's registry-free image (docker/sandbox). Apptainer has no such default on a cluster."""
    if backend == "docker":
        return HOST_IMAGE
    raise SandboxError(
        f"the {backend} sandbox needs an image for tasks that bring none: set `sandbox_image` in the config "
        "(or --image), e.g. docker://python:3.11 or a .sif file"
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
        pull: Pull | str = Pull.MISSING,
    ) -> None:
        self.limits = limits or Limits()
        image = image or default_image("docker")
        binds = list(binds or [])
        if image == HOST_IMAGE:  # that image is an empty root: it runs the host's read-only /usr
            binds = [*HOST_BINDS, *binds]
        # Read-only, absolute and present, or refused before any container or workspace exists; a HOST_BINDS
        # entry this host lacks (no /etc/alternatives) is left out rather than refused.
        binds = [b for b in binds if b not in HOST_BINDS or Path(b.partition(":")[0]).exists()]
        self.binds = parse_binds(binds)
        self.client = docker_client(base_url)
        # Pulled here, on first use, as the spec's `pull` asks (`sandbox.pull`); the host image is built, never pulled.
        ensure_image(self.client, image, pull, engine=base_url or "", local_only=image == HOST_IMAGE)
        self.ws = Workspace(source, copy=copy, max_copy_bytes=max_copy_bytes)
        self.workspace = self.ws.repo
        # The wrapper's own kill ends a command's stream at once when daemons hold its output; what the command
        # does to its traps cannot stop the host's settling step after it (`_settle`).
        self._prepare_folders(epilogue="kill -9 -1 2>/dev/null")
        volumes = [
            f"{self.ws.repo}:{WORKSPACE}:rw",
            f"{self.ws.state}:{INSIDE_STATE}:rw",
            f"{self.ws.control}:{INSIDE_CONTROL}:ro",
            f"{self.ws.home}:{HOME}:rw",
            f"{self.ws.tmp}:/tmp:rw",
            *(bind.docker() for bind in self.binds),
        ]
        env = {"HOME": HOME, "TMPDIR": "/tmp", "TERM": "dumb", "PAGER": "cat", "CI": "true"}
        env |= {"TERMINUS_WORKSPACE": WORKSPACE, "DEBIAN_FRONTEND": "noninteractive", **self.limits.extra_env}
        self.container = None
        try:
            self.container = self.client.containers.create(
                image,
                # An init of our own (INIT). The entrypoint is ours too: images whose ENTRYPOINT is already bash
                # (SWE-Bench Pro's) would otherwise run `bash /bin/bash -c ...` and exit at once.
                entrypoint=["/bin/bash"],
                command=["-c", INIT],
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
        except Exception as err:  # the engine refused (an image it cannot run, a bind it cannot make): no sandbox
            self._closed = False
            self.close()
            raise SandboxError(f"docker could not start a container of {image!r}: {one_line(err)}") from err
        self._closed = False

    @classmethod
    def from_spec(cls, spec, source, limits, network, **sizes):
        binds = list(spec.binds)
        return cls(
            source, limits, network, image=spec.image, binds=binds, base_url=spec.docker_url, pull=spec.pull, **sizes
        )

    def _ensure_running(self) -> None:
        self.container.reload()
        if self.container.status != "running":
            self.container.start()

    def run(self, command: str, timeout_s: float) -> CommandResult:
        timeout_s = self._stage(command, timeout_s)
        api = self.client.api
        try:
            self._ensure_running()
            exec_id = api.exec_create(self.container.id, self.wrapper_argv())["Id"]
        except Exception as err:  # the engine or the container is gone: the sandbox failed, not the command
            raise SandboxError(f"docker could not run the command in its container: {one_line(err)}") from err
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
        next_check = start + POLL_S
        timed_out = capped = settled = False
        leftovers = 0
        while True:
            try:
                chunk = chunks.get(timeout=max(0.0, min(deadline, next_check) - time.monotonic()))
            except queue.Empty:
                chunk = b""
            if chunk is None:
                break
            if chunk:
                collector.feed(chunk)
                if collector.total > self.limits.max_output_bytes and not capped:
                    capped = True
                    self._kill()
            now = time.monotonic()
            if now >= deadline:
                timed_out = True
                self._kill()
                deadline = now + 5.0
            elif now >= next_check:
                next_check = now + POLL_S
                if not (settled or timed_out or capped) and self._exited(exec_id):
                    # The command is gone but what it left holds its output open (its EXIT trap was removed,
                    # or it exec'd): end that now, not at the timeout.
                    settled = True
                    leftovers += self._settle()
        reader.join(timeout=5)
        duration = time.monotonic() - start
        exit_code = None
        if not timed_out:
            with contextlib.suppress(Exception):
                exit_code = api.exec_inspect(exec_id).get("ExitCode")
        leftovers += self._settle()
        return self._result(command, collector, duration, exit_code, timed_out, capped, leftovers)

    def _exited(self, exec_id: str) -> bool:
        """Whether the command's own process (the wrapper) has ended."""
        try:
            info = self.client.api.exec_inspect(exec_id)
        except Exception:
            return False
        return not info.get("Running") and info.get("ExitCode") is not None

    def _settle(self) -> int:
        """After a command, from the host alone (nothing of the container's is run): when any process but the
        container's init is left (the command removed its EXIT trap, or exec'd, so the wrapper's kill never ran),
        the container is killed, which kills everything in it, and started again by the next command; then the
        setuid and setgid bits of what the command could write are cleared. Returns how many were left."""
        left = self._left()
        if left:  # killed by the wrapper's own `kill -9 -1` a moment ago, maybe not yet gone: look once more
            time.sleep(0.2)
            left = self._left()
        if left:
            log.info("the command left %d processes in the container; killing it", len(left))
            self._kill()
        for folder in (self.ws.repo, self.ws.home, self.ws.tmp, self.ws.state):
            found, failed = clear_setid(folder)
            if found:
                log.info("cleared setuid/setgid bits of %d files below %s", found - len(failed), folder)
            if failed:
                log.warning("could not clear setuid/setgid bits below %s: %s", folder, "; ".join(failed[:5]))
        return len(left)

    def _left(self) -> list[str]:
        """The processes in the container other than its init and zombies, as the host's `ps` sees them (docker
        top), never as a program inside reports them; ["?"] when they cannot be listed in a running container."""
        try:
            self.container.reload()
            if self.container.status != "running":
                return []
            init = str(self.container.attrs["State"]["Pid"])
            top = self.container.top(ps_args="-eo pid,stat,args")
            titles = top.get("Titles") or []
            pid, state, args = (titles.index(t) for t in ("PID", "STAT", "COMMAND"))
            rows = top.get("Processes") or []
        except Exception as err:
            with contextlib.suppress(Exception):
                self.container.reload()
                if self.container.status != "running":  # stopped meanwhile: nothing is left
                    return []
            log.info("cannot list the container's processes (%s)", err)
            return ["?"]
        return [row[args] for row in rows if row[pid] != init and not row[state].startswith("Z")]

    def _kill(self) -> None:
        """SIGKILL to the container's init: the kernel kills every process of its PID namespace with it."""
        with contextlib.suppress(Exception):
            self.container.kill()
            self.container.wait(timeout=30)

    def _release(self) -> None:
        if self.container is None:  # it was never created
            return
        with contextlib.suppress(Exception):
            self.container.remove(force=True)
