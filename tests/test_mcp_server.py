"""`terminus mcp` as coding agents use it: a real subprocess over stdio (and HTTP), driven by the MCP SDK's own
client and by hand-written JSON-RPC lines, with the scripted expert working in real sandboxes."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import textwrap
import time
from pathlib import Path

import anyio
import pytest
from mcp import ClientSession, stdio_client

from mcp_client import (
    RawHttpSession,
    group_members,
    http_server,
    params,
    pids_running,
    printed_token,
    process_group,
    stop,
    terminus_argv,
    text_of,
    wait_for,
)
from terminus import __version__
from terminus.agent.parsing import parse_final_answer
from terminus.judge.facts import check, observations_of
from terminus.models.serve import free_port
from terminus.sandbox.bwrap import bwrap_path
from terminus.tasks.synthetic import TASK_TYPES, fix_for, generate

QUERY = "Run the unit tests and tell me what fails and why."


def failing_project(root: Path):
    project = generate("python", "billing", "fail", index=0, seed=1)
    project.write(root)
    return project


def test_sdk_client_lists_the_tool_and_gets_the_true_facts_with_progress(tmp_path):
    project = failing_project(tmp_path / "repo")
    kept = tmp_path / "kept"
    progress: list[tuple[float, str | None]] = []

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append((value, message))

    async def session():
        args = ("--repo", str(tmp_path / "repo"), "--policy", "scripted", "--trajectories", str(kept))
        async with stdio_client(params(*args)) as (read, write), ClientSession(read, write) as client:
            init = await client.initialize()
            tools = (await client.list_tools()).tools
            result = await client.call_tool(
                "execution_subagent", {"query": QUERY, "description": "billing tests"}, progress_callback=on_progress
            )
            return init, tools, result

    init, tools, result = anyio.run(session)
    assert init.server_info.name == "terminus" and init.server_info.version == __version__
    assert [t.name for t in tools] == ["execution_subagent"]
    schema = tools[0].input_schema
    assert sorted(schema["required"]) == ["description", "query"]
    assert {schema["properties"][k]["type"] for k in ("query", "description")} == {"string"}

    assert not result.is_error, text_of(result)
    answer = text_of(result)
    facts = project.facts
    assert facts["tests"]["failing"] == ["tests/test_billing.py::test_apply_discount_typical"]
    assert "tests/test_billing.py::test_apply_discount_typical" in answer
    assert "1 failed, 8 passed" in answer

    # The record is collect's, and the answer states every fact the checker knows, as seen in real output.
    records = [json.loads(line) for line in (kept / "trajectories.jsonl").read_text().splitlines()]
    assert len(records) == 1 and records[0]["schema"] == "terminus.trajectory/1"
    record = records[0]
    assert record["termination"] == "final_answer" and record["description"] == "billing tests"
    assert parse_final_answer(answer) == record["final_answer"]
    for task_type in TASK_TYPES["fail"]:
        verdict = check(record["final_answer"], facts, task_type, observations_of(record["messages"]))
        assert verdict.recall == 1.0 and not verdict.hallucinated, (task_type, verdict)
    timings = [json.loads(line) for line in (kept / "trajectories.timings.jsonl").read_text().splitlines()]
    assert timings[0]["id"] == record["id"] and len(timings[0]["durations_s"]) == len(record["turns"])

    # One notification per command run, numbered, naming the command's first line.
    assert [value for value, _ in progress] == list(range(1, len(record["turns"]) + 1))
    assert [message for _, message in progress] == [f"$ {t['command'].splitlines()[0]}" for t in record["turns"]]


def test_each_call_sees_the_repository_as_it_is_now(tmp_path):
    repo = tmp_path / "repo"
    project = failing_project(repo)
    fix = fix_for(project)

    async def session():
        async with stdio_client(params("--repo", str(repo))) as (read, write), ClientSession(read, write) as client:
            await client.initialize()
            before = await client.call_tool("execution_subagent", {"query": QUERY, "description": ""})
            target = repo / fix["file"]  # the main agent repairs the bug between the two calls
            target.write_text(target.read_text().replace(fix["old"], fix["new"], 1))
            after = await client.call_tool("execution_subagent", {"query": QUERY, "description": "after my fix"})
            return text_of(before), text_of(after)

    before, after = anyio.run(session)
    assert "1 failed, 8 passed" in before
    assert "9 passed" in after and "failed" not in after.split("Command: python3 -m pytest", 1)[1]


def test_bad_inputs_come_back_as_error_content_and_the_server_stays_up(tmp_path):
    repo = tmp_path / "repo"
    failing_project(repo)
    dead = f"http://127.0.0.1:{free_port()}/v1"  # nothing listens there
    quick = ["--max-turns", "3", "--request-timeout", "5"]

    async def session():
        results = {}
        async with stdio_client(params("--repo", str(repo))) as (read, write), ClientSession(read, write) as client:
            await client.initialize()
            results["empty query"] = await client.call_tool("execution_subagent", {"query": "  ", "description": ""})
            repo.rename(tmp_path / "moved")  # the repository disappears while the server runs
            results["missing repository"] = await client.call_tool(
                "execution_subagent", {"query": QUERY, "description": ""}
            )
            (tmp_path / "moved").rename(repo)
            results["after"] = await client.call_tool("execution_subagent", {"query": QUERY, "description": ""})
        args = ("--repo", str(repo), "--policy", "openai", "--model", "m", "--base-url", dead, *quick)
        async with stdio_client(params(*args)) as (read, write), ClientSession(read, write) as client:
            await client.initialize()
            results["endpoint down"] = await client.call_tool(
                "execution_subagent", {"query": QUERY, "description": ""}
            )
            results["listed after"] = [t.name for t in (await client.list_tools()).tools]
        args = ("--repo", str(repo), "--sandbox", "docker", "--image", "terminus-sandbox:host")
        env = {"DOCKER_HOST": f"unix://{tmp_path}/no-docker.sock"}  # a Docker engine that is not there
        async with stdio_client(params(*args, **env)) as (read, write), ClientSession(read, write) as client:
            await client.initialize()
            results["sandbox fails"] = await client.call_tool(
                "execution_subagent", {"query": QUERY, "description": ""}
            )
        return results

    results = anyio.run(session)
    empty = results["empty query"]
    assert empty.is_error and "the query is empty" in text_of(empty)
    missing = results["missing repository"]
    assert missing.is_error and f"the repository {repo} does not exist" in text_of(missing)
    assert not results["after"].is_error and "1 failed, 8 passed" in text_of(results["after"])
    down = results["endpoint down"]
    assert down.is_error and "unreachable" in text_of(down) and dead in text_of(down), text_of(down)
    assert results["listed after"] == ["execution_subagent"]
    box = results["sandbox fails"]
    assert box.is_error and "cannot start a docker sandbox" in text_of(box) and "Docker engine" in text_of(box)
    assert "start the engine" in text_of(box) and "--sandbox bwrap" in text_of(box)  # and what to do about it


def test_a_model_that_gives_no_answer_is_an_error_that_says_why(tmp_path, tiny_model):
    """The tiny model never calls the tool nor answers: the result is an error naming the termination and its count,
    the same words `terminus exec` prints, never an empty answer that reads like a result."""
    repo, kept = tmp_path / "repo", tmp_path / "kept"
    failing_project(repo)
    args = ("--repo", str(repo), "--policy", "transformers", "--model", str(tiny_model), "--sandbox", "local")

    async def session():
        async with (
            stdio_client(params(*args, "--trajectories", str(kept))) as (read, write),
            ClientSession(read, write) as client,
        ):
            await client.initialize()
            return await client.call_tool("execution_subagent", {"query": QUERY, "description": ""})

    result = anyio.run(session)
    [record] = [json.loads(line) for line in (kept / "trajectories.jsonl").read_text().splitlines()]
    assert record["termination"] == "format_error" and record["format_errors"] == 3
    assert result.is_error and text_of(result) == "no final answer: 3 malformed tool calls", text_of(result)


ISOLATION_TEST = """\
import pathlib
import time


def test_workspace_is_mine():
    claim = pathlib.Path(__file__).parent / "claimed"
    assert not claim.exists(), "another episode works in this folder"
    claim.write_text("x")
    time.sleep(3)  # both calls are in here at the same time
"""


def test_concurrent_calls_get_separate_workspaces(tmp_path):
    repo = tmp_path / "repo"
    (repo / "tests").mkdir(parents=True)
    (repo / "pyproject.toml").write_text('[project]\nname = "iso"\nversion = "0"\n')
    (repo / "tests" / "test_iso.py").write_text(ISOLATION_TEST)
    events: list[tuple[str, str, float]] = []

    async def one(client: ClientSession, name: str) -> str:
        async def on_progress(value, total, message) -> None:
            events.append((name, message or "", time.monotonic()))

        result = await client.call_tool(
            "execution_subagent", {"query": QUERY, "description": name}, progress_callback=on_progress
        )
        events.append((name, "done", time.monotonic()))
        return text_of(result)

    async def session():
        answers = {}
        args = ("--repo", str(repo), "--sandbox", "local")
        async with stdio_client(params(*args)) as (read, write), ClientSession(read, write) as client:
            await client.initialize()

            async def run(name):
                answers[name] = await one(client, name)

            async with anyio.create_task_group() as group:
                group.start_soon(run, "a")
                group.start_soon(run, "b")
                await anyio.sleep(1.5)  # both episodes are running their tests: the server still answers
                started = time.monotonic()
                await client.list_tools()
                answers["list_s"] = time.monotonic() - started
        return answers

    answers = anyio.run(session)
    for name in ("a", "b"):
        assert "1 passed" in answers[name] and "failed" not in answers[name], answers[name]
    assert answers["list_s"] < 1.0
    pytest_started = {name: t for name, message, t in events if "pytest" in message}
    done = {name: t for name, message, t in events if message == "done"}
    assert max(pytest_started.values()) < min(done.values()), "the two calls did not overlap"
    assert not (repo / "tests" / "claimed").exists()  # and the user's tree was never touched


def raw_exchange(proc: subprocess.Popen, message: dict, until_id: int | None = None) -> list[dict]:
    proc.stdin.write(json.dumps(message) + "\n")
    proc.stdin.flush()
    received = []
    while until_id is not None:
        line = proc.stdout.readline()
        assert line, f"the server closed stdout; stderr: {proc.stderr.read()}"
        received.append(json.loads(line))
        if received[-1].get("id") == until_id:
            break
    return received


def raw_server(args: list[str], env: dict, stderr=subprocess.DEVNULL) -> subprocess.Popen:
    """`terminus mcp` driven by hand: JSON-RPC lines on its stdin and stdout."""
    argv = terminus_argv("mcp", *args)
    return subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr, text=True, env=env)


def raw_initialize(proc: subprocess.Popen) -> dict:
    """The handshake: `initialize` (its reply is returned), then `notifications/initialized`."""
    init = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}}
    [reply] = raw_exchange(proc, {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": init}, 1)
    raw_exchange(proc, {"jsonrpc": "2.0", "method": "notifications/initialized"})
    return reply


def raw_subagent_call(proc: subprocess.Popen, call_id: int, progress_token: str | None = None, wait: bool = False):
    """Call execution_subagent with QUERY; with `wait`, the messages up to its result."""
    call = {"name": "execution_subagent", "arguments": {"query": QUERY, "description": ""}}
    if progress_token is not None:
        call["_meta"] = {"progressToken": progress_token}
    message = {"jsonrpc": "2.0", "id": call_id, "method": "tools/call", "params": call}
    return raw_exchange(proc, message, call_id if wait else None)


def test_contract_newline_delimited_json_rpc_over_stdio(tmp_path):
    """What any client does: one JSON-RPC message per line on stdin and stdout; settings from the environment."""
    failing_project(tmp_path / "repo")
    env = os.environ | {"TERMINUS_MCP_REPO": str(tmp_path / "repo"), "TERMINUS_MCP_POLICY": "scripted"}
    proc = raw_server([], env, stderr=subprocess.PIPE)
    try:
        reply = raw_initialize(proc)
        assert reply["result"]["serverInfo"]["name"] == "terminus"
        assert reply["result"]["protocolVersion"] == "2025-06-18" and "tools" in reply["result"]["capabilities"]
        [tools] = raw_exchange(proc, {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}, 2)
        [tool] = tools["result"]["tools"]
        assert tool["name"] == "execution_subagent" and sorted(tool["inputSchema"]["required"]) == [
            "description",
            "query",
        ]
        *notes, result = raw_subagent_call(proc, 3, progress_token="p1", wait=True)
        assert [n["method"] for n in notes] == ["notifications/progress"] * 2
        progress = notes[1]["params"]
        assert progress["progressToken"] == "p1" and progress["progress"] == 2
        assert progress["message"].startswith("$ python3 -m pytest -q 2>&1")  # then the expert's toolchain line
        assert result["result"]["isError"] is False
        assert "tests/test_billing.py::test_apply_discount_typical" in result["result"]["content"][0]["text"]
        proc.stdin.close()  # a client that goes away ends the server
        assert proc.wait(timeout=30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_sigterm_kills_the_running_commands_and_removes_the_sandboxes(tmp_path):
    repo, sandboxes, pid_file = tmp_path / "repo", tmp_path / "sandboxes", tmp_path / "pid"
    (repo / "tests").mkdir(parents=True)
    sandboxes.mkdir()
    (repo / "pyproject.toml").write_text('[project]\nname = "slow"\nversion = "0"\n')
    (repo / "tests" / "test_slow.py").write_text(
        textwrap.dedent(f"""\
        import os, pathlib, time

        def test_slow():
            pathlib.Path({str(pid_file)!r}).write_text(str(os.getpid()))
            time.sleep(120)
        """)
    )
    # Without a cgroup only the server itself can find the command (another process's sandbox start would
    # otherwise clean up after a dead server and hide a missing stop).
    env = os.environ | {"TMPDIR": str(sandboxes), "TERMINUS_NO_CGROUP": "1"}
    proc = raw_server(["--repo", str(repo), "--sandbox", "local"], env)
    test_pid = None
    try:
        raw_initialize(proc)
        raw_subagent_call(proc, 2)
        deadline = time.monotonic() + 60
        while not pid_file.is_file() or not pid_file.read_text():
            assert time.monotonic() < deadline, "the slow test never started"
            time.sleep(0.2)
        test_pid = int(pid_file.read_text())
        assert any(sandboxes.glob("terminus-run-*/ws-*")), "the sandbox is not where TMPDIR says"
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=20) == 128 + signal.SIGTERM
        deadline = time.monotonic() + 10
        while Path(f"/proc/{test_pid}").exists() and "Z" not in Path(f"/proc/{test_pid}/stat").read_text().split()[2]:
            assert time.monotonic() < deadline, "the command outlived the server"
            time.sleep(0.2)
        assert not any(sandboxes.glob("terminus-*")), list(sandboxes.iterdir())
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        if test_pid is not None:  # on a failure, leave nothing behind
            with contextlib.suppress(ProcessLookupError):
                os.kill(test_pid, signal.SIGKILL)


def test_streamable_http_on_localhost_with_the_printed_token(tmp_path):
    import httpx2
    from mcp.client.streamable_http import streamable_http_client

    failing_project(tmp_path / "repo")
    port, log = free_port(), tmp_path / "server.log"
    proc = http_server(port, "--repo", str(tmp_path / "repo"), log=log)

    async def session(token: str):
        headers = {"Authorization": f"Bearer {token}"}
        async with (
            httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30, read=300)) as http,
            streamable_http_client(f"http://127.0.0.1:{port}/mcp", http_client=http) as (read, write),
            ClientSession(read, write) as client,
        ):
            await client.initialize()
            return await client.call_tool("execution_subagent", {"query": QUERY, "description": ""})

    try:
        start = log.read_text().splitlines()
        assert f"streamable HTTP at http://127.0.0.1:{port}/mcp (loopback only)" in start[0]
        result = anyio.run(session, printed_token(log))
        assert not result.is_error and "1 failed, 8 passed" in text_of(result)
    finally:
        stop(proc)


def test_a_bad_setting_is_a_one_line_error_at_start():
    for args, expected in [
        (["--policy", "gpt"], "unknown policy 'gpt'"),
        (["--policy", "openai"], "needs --model"),
        (["--sandbox", "apptainer"], "the apptainer sandbox needs an image"),  # docker has its own: the host image
        (["--sandbox", "vm"], "'vm' is not one of"),
    ]:
        done = subprocess.run(
            terminus_argv("mcp", *args), capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL
        )
        assert done.returncode == 2, (args, done.stderr)
        assert expected in done.stderr and done.stderr.startswith("error: "), (args, done.stderr)


# -- a call that ends before its answer stops its command and its sandbox -------------------------------------------

STOPPED_WITHIN_S = 2.0
NEEDS_BWRAP = pytest.mark.skipif(bwrap_path() is None, reason="bwrap missing")


def sleeping_build(root: Path, tmp_path: Path) -> bytes:
    """A project whose build (the expert's second command, `make`) sleeps for minutes: the command line of that
    sleep, unique to this test, so /proc finds it and nothing else."""
    seconds = f"{600 + int.from_bytes(os.urandom(2), 'big') % 1000}.{os.getpid() % 1000:03d}"
    root.mkdir(parents=True)
    (root / "Makefile").write_text(f"all:\n\tsleep {seconds}\n\ntest:\n\ttouch {tmp_path / 'tested'}\n")
    return b"sleep\0" + seconds.encode() + b"\0"


def running_group(needle: bytes) -> int:
    """The process group of the sleeping build, once it runs."""
    found: list[int] = []
    wait_for(lambda: found.extend(pids_running(needle)) or found, 30, "the build never started")
    return process_group(found[0])


def assert_stopped(pgid: int, sandboxes: Path, needle: bytes) -> float:
    """The build's whole process group is gone within STOPPED_WITHIN_S, and then its sandbox folder; returns the
    seconds the group took."""
    took = wait_for(lambda: not group_members(pgid), STOPPED_WITHIN_S, f"process group {pgid} still runs")
    assert not pids_running(needle)
    wait_for(lambda: not any(sandboxes.glob("terminus-run-*/ws-*")), 10, "the sandbox folder is still there")
    return took


@pytest.mark.parametrize("sandbox", ["local", pytest.param("bwrap", marks=NEEDS_BWRAP)])
def test_a_cancelled_stdio_call_kills_its_command_and_starts_no_other(tmp_path, sandbox):
    repo, sandboxes = tmp_path / "repo", tmp_path / "sandboxes"
    needle = sleeping_build(repo, tmp_path)  # after `make`, the expert would run `make test`, leaving `tested`
    sandboxes.mkdir()
    proc = raw_server(["--repo", str(repo), "--sandbox", sandbox], os.environ | {"TMPDIR": str(sandboxes)})
    try:
        raw_initialize(proc)
        raw_subagent_call(proc, 2, progress_token="c")
        while True:  # until the build is announced
            message = json.loads(proc.stdout.readline())
            if message.get("method") == "notifications/progress" and message["params"]["progress"] == 2:
                break
        assert message["params"]["message"].startswith("$ make")
        pgid = running_group(needle)
        raw_exchange(proc, {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 2}})
        assert_stopped(pgid, sandboxes, needle)
        started = time.monotonic()
        replies = raw_exchange(proc, {"jsonrpc": "2.0", "id": 3, "method": "tools/list"}, 3)
        assert time.monotonic() - started < 2.0  # the server goes on
        assert replies[-1]["result"]["tools"][0]["name"] == "execution_subagent"
        time.sleep(1.0)
        assert not (tmp_path / "tested").exists(), "a command started after the call was cancelled"
    finally:
        proc.kill()
        proc.wait()


@pytest.mark.parametrize("how", ["cancel", "disconnect", "delete"])
def test_an_http_call_given_up_stops_its_command_and_sandbox(tmp_path, how):
    """notifications/cancelled, a dropped connection and a session DELETE each kill the running command's process
    group within 2 s and remove its sandbox; the server goes on serving."""
    repo, sandboxes, log = tmp_path / "repo", tmp_path / "sandboxes", tmp_path / "server.log"
    needle = sleeping_build(repo, tmp_path)
    sandboxes.mkdir()
    port = free_port()
    proc = http_server(port, "--repo", str(repo), log=log, env={"TMPDIR": str(sandboxes)})
    try:
        client = RawHttpSession(port, printed_token(log))
        client.initialize()
        with client.streaming_call(2, {"query": "build it", "description": ""}) as messages:
            for message in messages:  # until the build is announced
                if message.get("method") == "notifications/progress" and message["params"]["progress"] == 2:
                    break
            assert message["params"]["message"].startswith("$ make")
            pgid = running_group(needle)
            if how == "cancel":
                sent = client.notify("notifications/cancelled", {"requestId": 2})
                assert sent.status_code == 202
            elif how == "delete":
                assert client.delete().status_code == 200
        # leaving the block closed the call's connection: for "disconnect", that is the whole signal
        assert_stopped(pgid, sandboxes, needle)
        assert not (tmp_path / "tested").exists(), "a command started after the call was given up"
        assert proc.poll() is None
        other = RawHttpSession(port, printed_token(log))
        assert other.initialize()["result"]["serverInfo"]["name"] == "terminus"
    finally:
        stop(proc)


def test_a_stdio_client_that_goes_away_mid_call_stops_its_command(tmp_path):
    repo, sandboxes = tmp_path / "repo", tmp_path / "sandboxes"
    needle = sleeping_build(repo, tmp_path)
    sandboxes.mkdir()
    proc = raw_server(["--repo", str(repo)], os.environ | {"TMPDIR": str(sandboxes)})
    try:
        raw_initialize(proc)
        raw_subagent_call(proc, 2)
        pgid = running_group(needle)
        proc.stdin.close()  # the client exits
        assert_stopped(pgid, sandboxes, needle)
        proc.wait(timeout=20)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_a_home_folder_is_never_copied_on_every_call(tmp_path):
    """Started without --repo, the server works on the folder it starts in: that must be a git work tree (a client
    started in a home folder would copy it whole on every call). A folder outside git is named with --repo, and
    one over the copy cap is refused at start; one that grows past it while the server runs fails that call."""
    home = tmp_path / "home"
    home.mkdir()
    (home / "notes.txt").write_text("not a project\n")
    with (home / "photos.bin").open("wb") as f:  # sparse: 250 MB by st_size, no disk
        f.truncate(250_000_000)

    def start(*args: str, cwd: Path) -> subprocess.CompletedProcess:
        return subprocess.run(
            terminus_argv("mcp", *args), cwd=cwd, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL
        )

    for args, expected in [
        ((), f"the current folder {home} is not a git work tree"),
        (("--repo", str(home)), f"{home} holds more than 200 MB"),
    ]:
        done = start(*args, cwd=home)
        assert done.returncode == 2 and done.stderr.startswith("error: "), done.stderr
        assert expected in done.stderr and len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert "--max-copy-mb" in start("--repo", str(home), cwd=home).stderr

    project = tmp_path / "project"  # outside git, named with --repo, under a 1 MB cap until it grows
    failing_project(project)
    proc = raw_server(["--repo", str(project), "--max-copy-mb", "1"], os.environ, stderr=subprocess.PIPE)
    try:
        raw_initialize(proc)
        *_, first = raw_subagent_call(proc, 2, wait=True)
        assert first["result"]["isError"] is False, first
        with (project / "dataset.bin").open("wb") as f:
            f.truncate(2_000_000)
        *_, second = raw_subagent_call(proc, 3, wait=True)
        text = second["result"]["content"][0]["text"]
        assert second["result"]["isError"] is True and "holds more than 1 MB" in text and "--max-copy-mb" in text
    finally:
        proc.kill()
        proc.wait()

    checkout = tmp_path / "checkout"  # in a git work tree, no --repo is needed
    failing_project(checkout)
    subprocess.run(["git", "init", "-q"], cwd=checkout, check=True)
    proc = subprocess.Popen(
        terminus_argv("mcp"), cwd=checkout, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert raw_initialize(proc)["result"]["serverInfo"]["name"] == "terminus"
    finally:
        proc.kill()
        proc.wait()
