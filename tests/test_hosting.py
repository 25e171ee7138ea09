"""The coding-agent snippets parse and give `terminus mcp` arguments it accepts; `terminus serve` checks its
input, and (slow) serves the tiny model with vLLM for the printed `terminus mcp` and `terminus exec` lines,
then stops on Ctrl-C."""

from __future__ import annotations

import contextlib
import json
import os
import queue
import re
import shlex
import signal
import socket
import subprocess
import threading
import time
import tomllib
from pathlib import Path

import anyio
import pytest
import typer
import typer.main
from mcp import ClientSession, StdioServerParameters, stdio_client
from typer.testing import CliRunner

import readme
from mcp_client import server_env, terminus_argv, text_of
from terminus.cli import app
from terminus.cli.hosting import use_lines
from terminus.tasks.synthetic import generate

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples" / "mcp"
COMMANDS = typer.main.get_command(app).commands


def parse(command: str, args: list[str]) -> dict:
    """What `terminus COMMAND ARGS` would run with; a bad option, type or range raises."""
    with COMMANDS[command].make_context(command, list(args)) as ctx:
        return ctx.params


def in_readme(text: str) -> bool:
    """The README or a docs/ page (docs/use.md) shows the snippet as one of its code blocks, line for line."""
    return text.strip("\n") in {block.body.strip("\n") for block in readme.all_blocks()}


def test_claude_code_snippet():
    lines = [ln for ln in (EXAMPLES / "claude-code.sh").read_text().splitlines() if ln and not ln.startswith("#")]
    [command] = lines
    assert in_readme(command)
    argv = shlex.split(command)
    assert argv[:4] == ["claude", "mcp", "add", "terminus"] and argv[4] == "--"
    assert argv[5:7] == ["terminus", "mcp"]
    options = parse("mcp", argv[7:])
    assert (options["policy"], options["model"]) == ("openai", "terminus")
    assert options["base_url"] == "http://127.0.0.1:8000/v1"


def test_codex_snippet():
    text = (EXAMPLES / "codex-config.toml").read_text()
    assert in_readme(text)
    server = tomllib.loads(text)["mcp_servers"]["terminus"]
    assert server["command"] == "terminus" and server["args"][0] == "mcp"
    assert parse("mcp", server["args"][1:])["policy"] == "openai"
    assert server["tool_timeout_sec"] >= 600


def test_vscode_snippet():
    text = (EXAMPLES / "vscode-mcp.json").read_text()
    assert in_readme(text)
    server = json.loads(text)["servers"]["terminus"]
    assert server["type"] == "stdio" and server["command"] == "terminus" and server["args"][0] == "mcp"
    options = parse("mcp", server["args"][1:])
    assert options["repo"] == Path("${workspaceFolder}")  # VS Code substitutes the workspace folder
    assert options["base_url"] == "http://127.0.0.1:8000/v1"


def test_parsing_rejects_what_the_server_would_not_take():
    with pytest.raises(Exception, match="No such option: --no-such-flag"):  # typer's own click's UsageError
        parse("mcp", ["--no-such-flag"])
    with pytest.raises(typer.BadParameter):
        parse("mcp", ["--max-turns", "zero"])


def test_the_printed_lines_are_valid_commands():
    mcp_line, exec_line = use_lines("my model", "http://127.0.0.1:8123/v1")
    mcp_argv, exec_argv = shlex.split(mcp_line), shlex.split(exec_line)
    assert mcp_argv[:2] == ["terminus", "mcp"] and exec_argv[:2] == ["terminus", "exec"]
    options = parse("mcp", mcp_argv[2:])
    assert (options["model"], options["base_url"]) == ("my model", "http://127.0.0.1:8123/v1")
    assert parse("exec", exec_argv[2:])["query"]


def test_serve_checks_its_input_before_starting_vllm(tmp_path):
    runner = CliRunner()
    missing = runner.invoke(app, ["serve", "results/no-run/export"])
    assert missing.exit_code == 2 and "neither a folder nor a hub id" in missing.output
    not_a_model = runner.invoke(app, ["serve", str(tmp_path)])
    assert not_a_model.exit_code == 2 and "has no config.json" in not_a_model.output
    (tmp_path / "config.json").write_text("{}")
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        port = taken.getsockname()[1]
        busy = runner.invoke(app, ["serve", str(tmp_path), "--port", str(port)])
    assert busy.exit_code == 2 and f"port {port} on 127.0.0.1 is taken" in busy.output


def live_members(group: int) -> list[int]:
    """Processes of a process group that still run (zombies wait for an init that may reap them late)."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == group and fields[0] != "Z":
            found.append(int(stat.parent.name))
    return found


def _lines(stream, out: queue.Queue) -> None:
    for line in stream:
        out.put(line.rstrip("\n"))
    out.put(None)


@pytest.mark.slow
def test_serve_then_mcp_and_exec_through_the_openai_policy(tiny_model, tmp_path):
    """`terminus serve` on the tiny model; the exact lines it prints drive an MCP session and an exec run."""
    repo, kept = tmp_path / "repo", tmp_path / "kept"
    generate("python", "billing", "fail", index=0, seed=1).write(repo)
    serve = subprocess.Popen(
        terminus_argv("serve", str(tiny_model), "--port", "0", "--log", str(tmp_path / "v.log")),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    printed: queue.Queue = queue.Queue()
    threading.Thread(target=_lines, args=(serve.stdout, printed), daemon=True).start()
    vllm_pid = None
    try:
        seen: list[str] = []
        deadline = time.monotonic() + 600
        while not seen or seen[-1] != "Ctrl-C stops the server.":
            line = printed.get(timeout=max(1.0, deadline - time.monotonic()))
            assert line is not None, "terminus serve ended early:\n" + "\n".join(seen)
            seen.append(line)
        head = next(line for line in seen if line.startswith("vLLM (pid "))
        vllm_pid = int(re.match(r"vLLM \(pid (\d+)\)", head).group(1))
        mcp_line = next(line.strip() for line in seen if line.strip().startswith("terminus mcp "))
        exec_line = next(line.strip() for line in seen if line.strip().startswith("terminus exec "))

        # The MCP line as a client would run it, on our project, keeping the trajectory.
        argv = terminus_argv(*shlex.split(mcp_line)[1:], "--repo", str(repo), "--max-turns", "3")
        argv += ["--trajectories", str(kept)]
        params = StdioServerParameters(command=argv[0], args=argv[1:], env=server_env())
        progress: list[str] = []

        async def on_progress(value, total, message) -> None:
            progress.append(message)

        async def session():
            async with stdio_client(params) as (read, write), ClientSession(read, write) as client:
                await client.initialize()
                tools = (await client.list_tools()).tools
                result = await client.call_tool(
                    "execution_subagent",
                    {"query": "Run the unit tests.", "description": ""},
                    progress_callback=on_progress,
                )
                return tools, result

        tools, result = anyio.run(session)
        assert [t.name for t in tools] == ["execution_subagent"]
        [record] = [json.loads(line) for line in (kept / "trajectories.jsonl").read_text().splitlines()]
        # The tiny model's words mean nothing; the round trip works, and an episode without an answer says why.
        assert result.is_error == (record["final_answer"] is None), text_of(result)
        assert not result.is_error or text_of(result).startswith("no final answer: "), text_of(result)
        assert record["policy"] == "openai:terminus" and record["prompt_tokens"] > 0
        assert len(progress) == len(record["turns"])

        exec_argv = [arg if arg != "." else str(repo) for arg in shlex.split(exec_line)[1:]]
        done = subprocess.run(
            terminus_argv(*exec_argv, "--max-turns", "2"), capture_output=True, text=True, timeout=300
        )
        assert done.returncode in (0, 1), done.stderr  # 1: no final answer, said on stdout
        assert done.stdout.startswith("<final_answer>" if done.returncode == 0 else "no final answer: "), done.stdout
        assert done.stdout.rstrip().endswith("$0.0000 (a local model)"), done.stdout  # served here: $0

        serve.send_signal(signal.SIGINT)  # Ctrl-C
        assert serve.wait(timeout=90) == 0
        rest = []
        while (line := printed.get(timeout=10)) is not None:
            rest.append(line)
        assert f"stopped the vLLM server (pid {vllm_pid})" in rest
        deadline = time.monotonic() + 10  # SIGKILL is delivered, not awaited
        while live_members(vllm_pid):
            assert time.monotonic() < deadline, f"vLLM's processes {live_members(vllm_pid)} outlived Ctrl-C"
            time.sleep(0.2)
    finally:
        if serve.poll() is None:
            serve.kill()
            serve.wait()
        if vllm_pid is not None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(vllm_pid, signal.SIGKILL)
