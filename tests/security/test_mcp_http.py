"""`terminus mcp --http` is reachable by every local process (and, with --host, by other machines): each request
must carry the bearer token the server printed at start or was given by --token-env, and it listens on loopback
unless told otherwise. Driven as a client would, over real HTTP, against the real command."""

from __future__ import annotations

import secrets
import socket
import subprocess
from pathlib import Path

import httpx

from mcp_client import (
    INITIALIZE,
    RawHttpSession,
    http_server,
    printed_token,
    server_env,
    sse_messages,
    stop,
    terminus_argv,
)
from terminus.models.serve import free_port
from terminus.tasks.synthetic import generate

QUERY = "Run the unit tests and tell me what fails and why."
HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


def listening_addresses(port: int) -> set[str]:
    """Local addresses (hex, as /proc/net/tcp writes them) with a socket listening on `port`."""
    found = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            local, state = line.split()[1], line.split()[3]
            address, hex_port = local.split(":")
            if state == "0A" and int(hex_port, 16) == port:
                found.add(address)
    return found


def test_no_token_or_a_wrong_one_is_401_and_the_right_one_runs_the_tool(tmp_path):
    generate("python", "billing", "fail", index=0, seed=1).write(tmp_path / "repo")
    token = secrets.token_urlsafe(24)
    port, log = free_port(), tmp_path / "server.log"
    proc = http_server(
        port, "--repo", str(tmp_path / "repo"), "--token-env", "MY_MCP_TOKEN", log=log, env={"MY_MCP_TOKEN": token}
    )
    url = f"http://127.0.0.1:{port}/mcp"
    try:
        assert token not in log.read_text()  # a token the user gave is never echoed
        assert "Authorization: Bearer <the value of $MY_MCP_TOKEN>" in log.read_text()
        assert listening_addresses(port) == {"0100007F"}  # 127.0.0.1 only
        refused = {
            "no header": httpx.post(url, json=INITIALIZE, headers=HEADERS),
            "wrong token": httpx.post(url, json=INITIALIZE, headers=HEADERS | {"Authorization": "Bearer nope"}),
            "token + 1": httpx.post(url, json=INITIALIZE, headers=HEADERS | {"Authorization": f"Bearer {token}x"}),
            "no scheme": httpx.post(url, json=INITIALIZE, headers=HEADERS | {"Authorization": token}),
            "basic": httpx.post(url, json=INITIALIZE, headers=HEADERS | {"Authorization": f"Basic {token}"}),
            "in the query": httpx.post(f"{url}?token={token}", json=INITIALIZE, headers=HEADERS),
            "GET": httpx.get(url, headers={"Accept": "text/event-stream"}),
            "DELETE": httpx.delete(url),
        }
        for what, reply in refused.items():
            assert reply.status_code == 401, (what, reply.status_code, reply.text)
            assert reply.headers["www-authenticate"].startswith("Bearer"), what

        client = RawHttpSession(port, token)
        assert client.initialize()["result"]["serverInfo"]["name"] == "terminus"
        # The session id is no credential: without the token, a request in that session is refused too.
        session = {"Mcp-Session-Id": client.headers["Mcp-Session-Id"], "Mcp-Protocol-Version": "2025-06-18"}
        listing = {"jsonrpc": "2.0", "id": 5, "method": "tools/list"}
        assert httpx.post(url, json=listing, headers=HEADERS | session).status_code == 401
        call = {"name": "execution_subagent", "arguments": {"query": QUERY, "description": ""}}
        reply = client.request(2, "tools/call", call)
        [result] = [m for m in sse_messages(reply.text) if m.get("id") == 2]
        assert result["result"]["isError"] is False
        assert "1 failed, 8 passed" in result["result"]["content"][0]["text"]
    finally:
        stop(proc)


def test_a_generated_token_is_printed_once_and_new_at_each_start(tmp_path):
    tokens = []
    for run in range(2):
        port, log = free_port(), tmp_path / f"server{run}.log"
        proc = http_server(port, "--repo", str(tmp_path), log=log)
        try:
            tokens.append(printed_token(log))  # asserts exactly one line carries it
            client = RawHttpSession(port, tokens[-1])
            assert client.initialize()["result"]["serverInfo"]["name"] == "terminus"
        finally:
            stop(proc)
        assert log.read_text().count(tokens[-1]) == 1
    assert tokens[0] != tokens[1] and min(len(t) for t in tokens) >= 32


def test_token_settings_and_a_taken_port_are_one_line_errors(tmp_path):
    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen()
    port = taken.getsockname()[1]
    for args, env, expected in [
        (["--http", str(port)], {}, f"cannot listen on 127.0.0.1 port {port}"),
        (
            ["--http", "9", "--token-env", "UNSET_TOKEN_VAR"],
            {},
            "--token-env UNSET_TOKEN_VAR: the variable is not set",
        ),
        (["--http", "9", "--token-env", "SHORT"], {"SHORT": "abc"}, "at least 16 printable characters"),
        (["--token-env", "SHORT"], {"SHORT": "a" * 40}, "--token-env is for --http"),
    ]:
        done = subprocess.run(
            terminus_argv("mcp", "--repo", str(tmp_path), *args),
            capture_output=True,
            text=True,
            timeout=60,
            stdin=subprocess.DEVNULL,
            env=server_env(**env),
        )
        assert done.returncode == 2, (args, done.stderr)
        assert done.stderr.startswith("error: ") and expected in done.stderr, (args, done.stderr)
        assert len(done.stderr.strip().splitlines()) == 1, done.stderr
    taken.close()
