"""Terminus inside real coding agents: `terminus mcp` (the subagent as an MCP tool) and `terminus serve` (a
vLLM OpenAI-compatible server for a checkpoint, with the settings the subagent needs).

Only typer and the standard library are imported at the top: `terminus --help` stays fast, and the MCP SDK and
vLLM load when their command runs.
"""

from __future__ import annotations

import json
import logging
import os
import secrets
import shlex
import shutil
import signal
import sys
import tempfile
import time
from pathlib import Path

import typer

from terminus.agent.template import CHAT_KWARGS, CHAT_TEMPLATE
from terminus.cli import app
from terminus.cli.support import (
    BIND_HELP,
    TURN_LIMIT,
    copy_cap_bytes,
    copy_cap_option,
    project_spec,
    pull_option,
    seconds,
)
from terminus.errors import TerminusError
from terminus.mcp_http import HEADER_TIMEOUT_S
from terminus.models.serve import free_port, vllm_server
from terminus.runspec import POLICIES
from terminus.sandbox import Backend, SandboxSpec
from terminus.sandbox.copying import check_copy_size, in_git_work_tree
from terminus.sandbox.pull import Pull
from terminus.settings import REQUEST_TIMEOUT

EXAMPLE_QUERY = "run the unit tests and tell me what fails and why"
CLIENTS = ("claude", "codex", "vscode")  # `terminus mcp --print-config`


# Every `terminus mcp` flag can also come from the environment variable TERMINUS_MCP_<FLAG>, for clients that only
# pass an environment (the command is registered with these settings).
MCP_SETTINGS = {"auto_envvar_prefix": "TERMINUS_MCP"}


@app.command("mcp", context_settings=MCP_SETTINGS)
def mcp_command(
    repo: Path = typer.Option(
        None,
        help="Repository the subagent works on (a fresh copy per call, so it sees your latest edits; your tree is "
        "never modified). Default: the current folder, which must then be a git work tree.",
        show_default=False,
    ),
    policy: str = typer.Option("scripted", help=" | ".join(POLICIES)),
    model: str = typer.Option(None, help="Served model name (openai) or hub id/folder."),
    base_url: str = typer.Option(
        None, help="OpenAI-compatible endpoint, e.g. http://127.0.0.1:8000/v1 (`terminus serve` prints it)."
    ),
    api_key_env: str = typer.Option(
        None, help="Variable holding the endpoint's API key (default: OPENAI_API_KEY, none needed for local servers)."
    ),
    sandbox: Backend = typer.Option(None, help="Sandbox backend (default: bwrap where installed)."),
    pull: Pull = pull_option(),
    image: str = typer.Option(
        None, help="Image for --sandbox docker (default: the registry-free host image) or apptainer (needed)."
    ),
    max_turns: int = typer.Option(TURN_LIMIT, min=2, help="Turn limit per call."),
    request_timeout: float = typer.Option(
        float(REQUEST_TIMEOUT), help="Seconds to wait for one model reply (openai).", callback=seconds(1.0)
    ),
    trajectories: Path = typer.Option(
        None, help="Keep every call's trajectory in DIR/trajectories.jsonl (the record `terminus collect` writes)."
    ),
    max_copy_mb: int = copy_cap_option(envvar=None),
    bind: list[str] = typer.Option(None, "--bind", help=BIND_HELP),
    http: int = typer.Option(
        None, min=1, max=65535, help="Serve streamable HTTP on HOST:PORT (path /mcp) instead of stdio."
    ),
    host: str = typer.Option("127.0.0.1", help="Address --http listens on (default: loopback only)."),
    header_timeout: float = typer.Option(
        HEADER_TIMEOUT_S,
        help="With --http: seconds a connection has to send a request's headers before it is closed.",
        callback=seconds(0.1),
    ),
    token_env: str = typer.Option(
        None,
        help="With --http: the variable holding the bearer token clients must send (default: a fresh token, "
        "printed once on stderr at start).",
    ),
    verbose: bool = typer.Option(False, "--verbose", "-v", help="Log at INFO level."),
    print_config: str = typer.Option(
        None,
        "--print-config",
        help=f"{' | '.join(CLIENTS)}: print that client's configuration for this server, with this install's "
        "absolute `terminus` path and the other flags given, and exit.",
    ),
) -> None:
    """Serve the Execution Subagent to coding agents over MCP (stdio by default) as the tool `execution_subagent`.

    Every flag can also be set through the environment variable TERMINUS_MCP_<FLAG> (e.g. TERMINUS_MCP_POLICY),
    for clients that only pass an environment. Logs go to stderr; stdout carries the protocol. Over --http every
    request needs the header `Authorization: Bearer <token>`.
    """
    if policy not in POLICIES:
        raise TerminusError(f"unknown policy {policy!r}; choose one of {', '.join(POLICIES)}")
    if policy != "scripted" and not model:  # before anything is found or printed: one line, the error
        raise TerminusError(f"policy {policy!r} needs --model (a hub id, a model folder or a served model name)")
    if print_config is not None:
        flags = {"--repo": repo and str(repo.expanduser().resolve()), "--policy": policy, "--model": model,
                 "--base-url": base_url, "--api-key-env": api_key_env, "--sandbox": sandbox, "--image": image,
                 "--pull": pull, "--max-turns": max_turns if max_turns != TURN_LIMIT else None}  # fmt: skip
        binds = [f for b in bind or () for f in ("--bind", b)]
        typer.echo(client_config(print_config, [f for k, v in flags.items() if v for f in (k, str(v))] + binds))
        return
    token = _http_token(http, token_env)
    folder = _mcp_repo(repo, copy_cap_bytes(max_copy_mb))
    logging.basicConfig(
        level=logging.INFO if verbose else logging.WARNING,
        stream=sys.stderr,
        format="terminus mcp %(levelname)s %(name)s: %(message)s",
    )
    from terminus.mcp_server import LOOPBACK, ServerSettings, serve

    settings = ServerSettings(
        repo=folder,
        policy=policy,
        model=model,
        base_url=base_url,
        api_key_env=api_key_env,
        # the server's spec, made once (the project's environment found now): every call's sandbox is of it
        sandbox=project_spec(SandboxSpec(sandbox, image, pull=pull), folder, bind, "git", "terminus mcp"),
        max_turns=max_turns,
        request_timeout=request_timeout,
        trajectories=trajectories.expanduser().resolve() if trajectories else None,
        max_copy_bytes=copy_cap_bytes(max_copy_mb),
    )

    def announce() -> None:
        where = "loopback only" if host in LOOPBACK else "REACHABLE FROM OTHER MACHINES; the token travels unencrypted"
        typer.echo(f"terminus mcp: streamable HTTP at http://{_url_host(host)}:{http}/mcp ({where})", err=True)
        if token_env:
            typer.echo(f"terminus mcp: clients must send Authorization: Bearer <the value of ${token_env}>", err=True)
        else:  # printed once, here; never logged
            typer.echo(f"terminus mcp: clients must send Authorization: Bearer {token}", err=True)

    try:
        serve(settings, http_port=http, host=host, token=token, on_listening=announce, header_timeout_s=header_timeout)
    except OSError as err:  # the system refused a file or model folder: its message names it
        raise TerminusError(str(err)) from err


def terminus_executable() -> str:
    """The absolute path of the `terminus` being run (a client started outside this venv does not find a bare one)."""

    here = Path(sys.argv[0])
    if here.name == "terminus" and here.is_file():
        return str(here.absolute())
    found = shutil.which("terminus")
    if found is None:
        raise TerminusError(
            "cannot find the `terminus` executable: run `terminus mcp --print-config` from the install to use"
        )
    return str(Path(found).absolute())


def client_config(client: str, args: list[str]) -> str:
    """The snippet that registers this server with a coding agent: a shell command (Claude Code), a TOML table
    (Codex CLI, ~/.codex/config.toml) or a JSON file (VS Code, .vscode/mcp.json)."""

    exe = terminus_executable()
    if client == "claude":
        return "claude mcp add terminus -- " + shlex.join([exe, "mcp", *args])
    if client == "codex":
        quoted = ", ".join(json.dumps(a) for a in ["mcp", *args])
        return (
            f"[mcp_servers.terminus]\ncommand = {json.dumps(exe)}\nargs = [{quoted}]\n"
            "tool_timeout_sec = 600  # an episode that builds and tests can outlast Codex's default of 60 s"
        )
    if client == "vscode":
        if "--repo" not in args:
            args = ["--repo", "${workspaceFolder}", *args]
        server = {"type": "stdio", "command": exe, "args": ["mcp", *args]}
        return json.dumps({"servers": {"terminus": server}}, indent=2)
    raise TerminusError(f"--print-config {client!r}: choose one of {', '.join(CLIENTS)}")


MIN_TOKEN_CHARS = 16


def _http_token(http: int | None, token_env: str | None) -> str:
    """The bearer token HTTP clients must send: the named variable's value, or a fresh random one."""
    if http is None:
        if token_env:
            raise TerminusError(
                "--token-env is for --http; over stdio the client owns the server process and needs no token"
            )
        return ""
    if not token_env:
        return secrets.token_urlsafe(32)
    token = os.environ.get(token_env, "")
    if not token.strip():
        raise TerminusError(
            f"--token-env {token_env}: the variable is not set or empty; export it with the token clients will send"
        )
    if len(token) < MIN_TOKEN_CHARS or not token.isprintable() or token != token.strip():
        raise TerminusError(
            f"--token-env {token_env}: the token must be at least {MIN_TOKEN_CHARS} printable characters with no "
            "surrounding spaces (e.g. python3 -c 'import secrets; print(secrets.token_urlsafe(32))')"
        )
    return token


def _mcp_repo(repo: Path | None, max_copy_bytes: int | None) -> Path:
    """The folder every call copies. Without --repo it is the current folder, which must be a git work tree: a
    client started in a home folder must not copy it on every call. A folder copied whole is measured now."""

    folder = (repo or Path.cwd()).expanduser().resolve()
    if repo is None and not in_git_work_tree(folder):
        raise TerminusError(
            f"the current folder {folder} is not a git work tree, and every call would copy it whole; name the "
            "project with --repo DIR (or TERMINUS_MCP_REPO)"
        )
    if folder.is_dir():
        check_copy_size(folder, max_copy_bytes)
    return folder


def _url_host(host: str) -> str:
    return f"[{host}]" if ":" in host else host


def use_lines(served_name: str, url: str) -> list[str]:
    """The exact commands that use a served model: the MCP server for a coding agent, and one direct episode."""
    endpoint = ["--policy", "openai", "--model", served_name, "--base-url", url]
    return [
        shlex.join(["terminus", "mcp", *endpoint]),
        shlex.join(["terminus", "exec", "--repo", ".", "--query", EXAMPLE_QUERY, *endpoint]),
    ]


@app.command("serve")
def serve_command(
    model: str = typer.Argument(..., help="Model folder (e.g. results/<run>/export) or hub id (e.g. Qwen/Qwen3-4B)."),
    port: int = typer.Option(8000, min=0, max=65535, help="Port on 127.0.0.1 (0: any free one)."),
    served_name: str = typer.Option(None, help="Name clients ask for (default: the hub id, or 'terminus')."),
    max_model_len: int = typer.Option(None, min=256, help="Context length (default: the model's own)."),
    chat_template: Path = typer.Option(
        None,
        help="Jinja chat template (default: configs/agent/chat_template.jinja, the one every stage trains and "
        "serves with).",
    ),
    startup_timeout: float = typer.Option(
        900.0, help="Seconds to wait for the server to be healthy.", callback=seconds(10.0)
    ),
    log: Path = typer.Option(None, help="vLLM's log file (default: $TMPDIR/vllm-server-PORT.log)."),
) -> None:
    """Serve a checkpoint with vLLM's OpenAI-compatible server (hermes tool parser), print how to use it, and
    stop it on Ctrl-C."""

    folder = Path(model).expanduser()
    local = folder.exists()
    looks_local = model.startswith((".", "/", "~")) or model.count("/") != 1 or Path(model.split("/")[0]).is_dir()
    if not local and looks_local:
        raise TerminusError(
            f"model {model} is neither a folder nor a hub id (owner/name); give `results/<run>/export` "
            "(written by `terminus export`) or e.g. Qwen/Qwen3-4B"
        )
    if local and not (folder / "config.json").is_file():
        raise TerminusError(f"{folder} has no config.json: it is not a model folder (`terminus export` writes one)")
    if chat_template is not None and not chat_template.is_file():
        raise TerminusError(f"--chat-template {chat_template} does not exist")
    name = served_name or ("terminus" if local else model)
    port = port or free_port()
    log = log or Path(tempfile.gettempdir()) / f"vllm-server-{port}.log"
    import torch

    # Ctrl-C and SIGTERM both unwind through vllm_server, which stops the server's process group by PID.
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    server: dict = {}
    try:
        with vllm_server(
            str(folder.resolve()) if local else model,
            served_name=name,
            log=log,
            max_model_len=max_model_len,
            startup_s=startup_timeout,
            port=port,
            chat_template=chat_template.resolve() if chat_template else CHAT_TEMPLATE,
            chat_kwargs=CHAT_KWARGS,
            enforce_eager=not torch.cuda.is_available(),  # CUDA graphs where there is CUDA
            on_start=lambda proc: server.update(proc=proc),
        ) as url:
            proc = server["proc"]
            typer.echo(f"vLLM (pid {proc.pid}) serves {model} as {name!r} at {url} (log: {log})")
            typer.echo("Use it from a coding agent (MCP) or directly:")
            for line in use_lines(name, url):
                typer.echo(f"  {line}")
            typer.echo("Ctrl-C stops the server.", nl=True)
            sys.stdout.flush()
            while proc.poll() is None:
                time.sleep(1)
            raise TerminusError(f"the vLLM server exited with {proc.returncode}; see its log {log}")
    except KeyboardInterrupt:
        pid = server["proc"].pid if "proc" in server else None
        typer.echo(f"stopped the vLLM server (pid {pid})" if pid else "stopped before the server started")
