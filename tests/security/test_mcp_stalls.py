"""Issue 39: `terminus mcp` answers what it cannot read, and holds no connection for a client that never finishes
its request. Over stdio, a line that is not JSON gets JSON-RPC's parse error (-32700, id null) and one that is JSON
but no message gets invalid request (-32600), and the next line is served; over HTTP, a connection that has not
sent whole request headers within --header-timeout seconds is closed, whether it is new or kept alive. Driven as
a client would, against the real command."""

from __future__ import annotations

import json
import os
import select
import socket
import subprocess
import time

from mcp_client import RawHttpSession, http_server, printed_token, stop, terminus_argv
from terminus.models.serve import free_port


def _closed_after(sock: socket.socket, limit_s: float) -> float:
    """Seconds until the server closed `sock` (reads return nothing); fails if it is still open after `limit_s`."""
    sock.settimeout(limit_s)
    start = time.monotonic()
    try:
        while sock.recv(4096):
            pass
    except TimeoutError:
        raise AssertionError(f"the server still holds the connection after {limit_s} s") from None
    return time.monotonic() - start


def test_a_request_never_finished_is_disconnected_after_the_header_timeout(tmp_path):
    port, log = free_port(), tmp_path / "server.log"
    proc = http_server(port, "--repo", str(tmp_path), log=log)  # the default timeout, 10 s
    try:
        token = printed_token(log)
        half = socket.create_connection(("127.0.0.1", port))
        half.sendall(b"POST /mc")  # half a request line, and nothing more
        drip = socket.create_connection(("127.0.0.1", port))
        drip.sendall(b"POST /mcp HTTP/1.1\r\nHost: x\r\n")  # headers begun, never ended
        # a kept-alive connection: a whole request is answered, then half of the next one is sent
        alive = socket.create_connection(("127.0.0.1", port))
        alive.sendall(b"GET /mcp HTTP/1.1\r\nHost: x\r\n\r\n")
        assert alive.recv(4096).startswith(b"HTTP/1.1 401")
        alive.sendall(b"POST /m")
        for sock in (half, drip, alive):
            assert _closed_after(sock, 30) < 20

        # clients that send whole requests are served as before
        client = RawHttpSession(port, token)
        assert client.initialize()["result"]["serverInfo"]["name"] == "terminus"
        client.close()
    finally:
        stop(proc)


def test_the_header_timeout_is_a_setting(tmp_path):
    port, log = free_port(), tmp_path / "server.log"
    proc = http_server(port, "--repo", str(tmp_path), log=log, env={"TERMINUS_MCP_HEADER_TIMEOUT": "1"})
    try:
        half = socket.create_connection(("127.0.0.1", port))
        half.sendall(b"POST /mc")
        assert _closed_after(half, 30) < 5
    finally:
        stop(proc)


def test_malformed_json_rpc_lines_on_stdio_get_the_standard_error_and_the_next_line_is_served(tmp_path):
    env = os.environ | {"TERMINUS_MCP_REPO": str(tmp_path), "TERMINUS_MCP_POLICY": "scripted"}
    proc = subprocess.Popen(
        terminus_argv("mcp"), stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env
    )

    def exchange(line: bytes) -> dict:
        proc.stdin.write(line + b"\n")
        proc.stdin.flush()
        ready, _, _ = select.select([proc.stdout], [], [], 30)  # one reply a line: nothing is left buffered
        assert ready, f"no reply to {line!r} in 30 s"
        reply = proc.stdout.readline()
        assert reply, "the server closed stdout"
        return json.loads(reply)

    try:
        init = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}}
        message = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": init}
        assert exchange(json.dumps(message).encode())["result"]["serverInfo"]["name"] == "terminus"
        proc.stdin.write(b'{"jsonrpc": "2.0", "method": "notifications/initialized"}\n')
        for line in (b'{"jsonrpc": "2.0", "id": 2, "method": "tools/li', b"\xff\xfe not text", b"[1, 2"):
            reply = exchange(line)
            assert reply["id"] is None and reply["error"]["code"] == -32700, (line, reply)
        for line, request_id in (
            (b'{"jsonrpc": "2.0", "id": 3}', 3),
            (b"42", None),
            (b'{"id": "x", "method": 5}', "x"),
        ):
            reply = exchange(line)
            assert reply["id"] == request_id and reply["error"]["code"] == -32600, (line, reply)
        listing = exchange(b'{"jsonrpc": "2.0", "id": 4, "method": "tools/list"}')
        assert [t["name"] for t in listing["result"]["tools"]] == ["execution_subagent"]
        proc.stdin.close()
        assert proc.wait(timeout=30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
