"""How the tests start `terminus mcp` as an MCP client would: the installed command, a minimal environment; and
how they drive its HTTP transport by hand and watch the processes a call runs."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
from mcp import StdioServerParameters


def terminus_argv(*args: str) -> list[str]:
    """The installed `terminus` command of this interpreter's environment (the contract names it)."""
    script = Path(sys.executable).parent / "terminus"
    return [str(script), *args] if script.is_file() else [sys.executable, "-m", "terminus.cli", *args]


def server_env(**extra: str) -> dict[str, str]:
    # The SDK starts servers with a minimal environment; PYTHONPATH keeps a source checkout importable.
    env = {"PATH": os.environ["PATH"], "PYTHONPATH": os.environ.get("PYTHONPATH", "")}
    return env | extra


def params(*args: str, **env: str) -> StdioServerParameters:
    argv = terminus_argv("mcp", *args)
    return StdioServerParameters(command=argv[0], args=argv[1:], env=server_env(**env))


def text_of(result) -> str:
    return "\n".join(block.text for block in result.content if block.type == "text")


# -- hand-driven streamable HTTP, and the processes a call leaves ---------------------------------------------------

PROTOCOL = "2025-06-18"
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": PROTOCOL, "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}},
}


def http_server(port: int, *args: str, log: Path, env: dict[str, str] | None = None) -> subprocess.Popen:
    """`terminus mcp --http PORT ARGS`, its stderr (which carries the token) in `log`; up once it answers."""
    with log.open("w") as err:
        proc = subprocess.Popen(
            terminus_argv("mcp", "--http", str(port), *args),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=err,
            env=os.environ | (env or {}),
        )
    deadline = time.monotonic() + 60
    while True:
        try:
            httpx.get(f"http://127.0.0.1:{port}/mcp", timeout=2)
            return proc
        except httpx.TransportError:
            if proc.poll() is not None:
                raise AssertionError(f"terminus mcp --http exited {proc.returncode}: {log.read_text()}") from None
            assert time.monotonic() < deadline, "the HTTP server did not come up"
            time.sleep(0.3)


def printed_token(log: Path) -> str:
    """The token the server printed on stderr at start (the line `... Authorization: Bearer <token>`)."""
    lines = [line for line in log.read_text().splitlines() if "Authorization: Bearer " in line]
    assert len(lines) == 1, log.read_text()
    return lines[0].rsplit("Bearer ", 1)[1].strip()


def stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


class RawHttpSession:
    """One MCP session over streamable HTTP, message by message, so a test can drop a call's connection or
    delete the session while a tool call runs."""

    def __init__(self, port: int, token: str | None) -> None:
        self.url = f"http://127.0.0.1:{port}/mcp"
        self.headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
        if token is not None:
            self.headers["Authorization"] = f"Bearer {token}"
        self.client = httpx.Client(timeout=httpx.Timeout(60, connect=5))

    def initialize(self) -> dict:
        reply = self.client.post(self.url, json=INITIALIZE, headers=self.headers)
        reply.raise_for_status()
        self.headers["Mcp-Session-Id"] = reply.headers["mcp-session-id"]
        self.headers["Mcp-Protocol-Version"] = PROTOCOL
        [result] = sse_messages(reply.text)
        self.notify("notifications/initialized")
        return result

    def notify(self, method: str, params: dict | None = None) -> httpx.Response:
        message = {"jsonrpc": "2.0", "method": method} | ({"params": params} if params else {})
        return self.client.post(self.url, json=message, headers=self.headers)

    def request(self, call_id: int, method: str, params: dict | None = None) -> httpx.Response:
        message = {"jsonrpc": "2.0", "id": call_id, "method": method, "params": params or {}}
        return self.client.post(self.url, json=message, headers=self.headers)

    @contextlib.contextmanager
    def streaming_call(self, call_id: int, arguments: dict, progress_token: str = "p"):
        """A tools/call whose SSE response is read as it comes; leaving the block drops the connection."""
        params = {"name": "execution_subagent", "arguments": arguments, "_meta": {"progressToken": progress_token}}
        message = {"jsonrpc": "2.0", "id": call_id, "method": "tools/call", "params": params}
        with (
            httpx.Client(timeout=httpx.Timeout(120, connect=5)) as own,  # its own connection, to drop
            own.stream("POST", self.url, json=message, headers=self.headers) as response,
        ):
            response.raise_for_status()
            yield _sse_iter(response)

    def delete(self) -> httpx.Response:
        return self.client.delete(self.url, headers=self.headers)

    def close(self) -> None:
        self.client.close()


def sse_messages(text: str) -> list[dict]:
    return [json.loads(line[5:]) for line in text.splitlines() if line.startswith("data:") and line[5:].strip()]


def _sse_iter(response: httpx.Response):
    for line in response.iter_lines():
        if line.startswith("data:") and line[5:].strip():
            yield json.loads(line[5:])


def pids_running(needle: bytes) -> list[int]:
    """Live processes whose command line contains `needle` (NUL-separated arguments)."""
    found = []
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                if needle in Path(entry.path, "cmdline").read_bytes() and _state(entry.name)[0] != "Z":
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


def _state(pid: str) -> list[str]:
    """/proc/PID/stat after the command name: state, ppid, pgrp, ..."""
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()


def process_group(pid: int) -> int:
    return int(_state(str(pid))[2])


def group_members(pgid: int) -> list[int]:
    """Live (not zombie) processes in the process group."""
    members = []
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                fields = _state(entry.name)
            except OSError:
                continue
            if int(fields[2]) == pgid and fields[0] != "Z":
                members.append(int(entry.name))
    return members


def wait_for(predicate, timeout_s: float, what: str, interval_s: float = 0.05) -> float:
    """Seconds until `predicate()` holds; AssertionError naming `what` after `timeout_s`."""
    start = time.monotonic()
    while not predicate():
        assert time.monotonic() - start < timeout_s, f"{what} after {timeout_s} s"
        time.sleep(interval_s)
    return time.monotonic() - start
