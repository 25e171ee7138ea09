"""`terminus mcp`: the Execution Subagent as a tool that coding agents call over the Model Context Protocol.

Claude Code, Codex CLI, VS Code and other MCP clients start this server and get one tool,
`execution_subagent(query, description)`, VS Code's own contract. Each call copies the repository as it is at
that moment (the main agent's edits included) into a fresh sandbox and runs one episode in a worker thread, so
calls run side by side and the server keeps answering. Each command the subagent runs is announced as a
progress notification; the final answer (Command/Summary pairs, then notes) comes back as text. Whatever goes
wrong in a call (no query, no repository, no sandbox, no endpoint) comes back as the result's error content,
and the server stays up.

A call that ends before its answer (`notifications/cancelled`, a client that disconnects, a session DELETE, the
server stopping) kills its running command and removes its sandbox at once. Over HTTP every request must carry
`Authorization: Bearer <token>` (any local process can reach a loopback port; only the user holds the token).
"""

from __future__ import annotations

import logging
import os
import signal
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated

import anyio
import anyio.from_thread
import anyio.to_thread
from mcp.server.mcpserver import Context, MCPServer
from mcp.types import CallToolResult, TextContent
from pydantic import Field

from terminus import __version__
from terminus.agent.loop import AgentConfig, ExecutionSubagent, answer_text, no_answer_reason
from terminus.agent.trajectory import Trajectory, command_outputs
from terminus.collect.runner import split_timings
from terminus.io import append_jsonl
from terminus.mcp_http import HEADER_TIMEOUT_S, LOOPBACK, listen, serve_http  # noqa: F401 - LOOPBACK: the CLI's
from terminus.mcp_stdio import serve_stdio
from terminus.models import make_policy
from terminus.models.openai_compat import api_key_from_env
from terminus.runspec import LOCAL_POLICIES
from terminus.sandbox import Sandbox, SandboxError, SandboxSpec, default_backend, make_sandbox
from terminus.sandbox.docker import default_image
from terminus.sandbox.projectenv import unseen_host_paths
from terminus.sandbox.tmproot import remove_own_root
from terminus.settings import REQUEST_TIMEOUT

log = logging.getLogger(__name__)

TOOL_NAME = "execution_subagent"
TOOL_DESCRIPTION = (
    "Delegate terminal work (building, running tests, reproducing and diagnosing failures, checking "
    "dependencies) to an execution subagent. It runs the commands itself, in a sandbox over a copy of the "
    "repository as it is now, and returns one short Command/Summary pair per command (counts, failing tests, "
    "the first error with file:line, the likely fix) instead of the logs."
)
QUERY_HELP = "What to run and what you want to know, e.g. 'run the unit tests and tell me what fails and why'."
DESCRIPTION_HELP = "A few words on the task and any context the subagent should know; may be empty."
INSTRUCTIONS = (
    "Use execution_subagent to build, run tests or diagnose failures: it keeps verbose output out of your "
    "context. It never changes your files; it works on a copy."
)
PROGRESS_CHARS = 200  # a progress line names the command; a generated one-liner can run to kilobytes


@dataclass
class ServerSettings:
    """What `terminus mcp` is started with (flags, or TERMINUS_MCP_* environment variables)."""

    repo: Path
    max_turns: int
    sandbox: SandboxSpec
    """Backend and image (docker and apptainer) of every call's sandbox."""
    policy: str = "scripted"
    model: str | None = None
    base_url: str | None = None
    api_key_env: str | None = None
    request_timeout: float = float(REQUEST_TIMEOUT)
    """Seconds to wait for one model reply (openai policy)."""
    trajectories: Path | None = None
    """Folder for `trajectories.jsonl` (collect's record) and its `.timings.jsonl` sidecar; None: not kept."""
    max_copy_bytes: int | None = None
    """Cap on a repository copied whole (not a git work tree); None: no cap."""


class EpisodeCancelled(RuntimeError):
    """The client cancelled the call or the server is stopping: no further command is started."""


class _OneAtATime:
    """An in-process model (transformers, vLLM engine) is not safe to call from two threads at once."""

    def __init__(self, policy) -> None:
        self.policy, self.name, self.lock = policy, policy.name, threading.Lock()

    def respond(self, messages: list[dict], tools: list[dict], tool_choice: str | None = None) -> dict:
        with self.lock:
            return self.policy.respond(messages, tools, tool_choice=tool_choice)


def make_server_policy(settings: ServerSettings):
    """The policy every call shares. Raises ValueError, PolicyError or MissingKeyError on a bad setting."""

    options: dict = {}
    if settings.policy == "openai":
        options["timeout_s"] = settings.request_timeout
        key = api_key_from_env(settings.api_key_env, "--api-key-env")
        if key:
            options["api_key"] = key
    policy = make_policy(settings.policy, model=settings.model, base_url=settings.base_url, **options)
    return _OneAtATime(policy) if settings.policy in LOCAL_POLICIES else policy


@dataclass
class _Call:
    """One tool call in flight: its sandbox, once made, and whether it should stop."""

    id: str
    box: Sandbox | None = None
    cancelled: threading.Event = field(default_factory=threading.Event)


def new_trajectory_id() -> str:
    """Sorts by time, so a session's calls read in order in the trajectories file."""
    return f"mcp-{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())}-{uuid.uuid4().hex[:8]}"


def first_line(command: str) -> str:
    line = next((part for part in command.strip().splitlines() if part.strip()), command.strip())
    return line if len(line) <= PROGRESS_CHARS else line[: PROGRESS_CHARS - 3] + "..."


class SubagentService:
    """The work behind the tool, with no MCP in it: one episode per call, each in a sandbox of its own."""

    def __init__(self, settings: ServerSettings, policy) -> None:
        self.settings = settings
        self.policy = policy
        self.backend = settings.sandbox.backend or default_backend()
        if self.backend.runs_image and not settings.sandbox.image:
            default_image(self.backend)  # apptainer has none: said in one line at start, not at the first call
        self._calls: dict[str, _Call] = {}
        self._lock = threading.Lock()

    def call(
        self, query: str, description: str, on_command: Callable[[str], None] | None = None, call: _Call | None = None
    ) -> tuple[str, bool]:
        """(text for the main agent, whether it reports a failure). Blocks for the whole episode: run it in a
        worker thread. Never raises: every failure becomes a one-line error the main agent can act on."""
        call = call or _Call(new_trajectory_id())
        try:
            return self._call(query, description, on_command, call)
        except Exception as err:  # our own bug must not take the server (and the client's other calls) down
            log.exception("call %s failed", call.id)
            return f"error: the subagent failed unexpectedly ({type(err).__name__}: {err}); see the server log", True

    def _call(self, query: str, description: str, on_command, call: _Call) -> tuple[str, bool]:
        if not isinstance(query, str) or not query.strip():
            return "error: the query is empty; say what to run and what you want to know (e.g. 'run the tests')", True
        repo = self.settings.repo
        if not repo.is_dir():
            return (
                f"error: the repository {repo} does not exist or is not a folder; start the server with "
                "--repo DIR (or TERMINUS_MCP_REPO) naming the project to work on"
            ), True

        def announce(command: str) -> None:
            if call.cancelled.is_set():
                raise EpisodeCancelled("the call was cancelled before this command started")
            if on_command is not None:
                on_command(command)

        with self._lock:
            self._calls[call.id] = call
        try:
            try:
                call.box = make_sandbox(self.settings.sandbox, repo, max_copy_bytes=self.settings.max_copy_bytes)
            except (SandboxError, OSError) as err:
                return f"error: cannot start a {self.backend} sandbox over {repo}: {err}", True
            if call.cancelled.is_set():  # the server began stopping while the repository was being copied
                return "error: the call was cancelled", True
            agent = ExecutionSubagent(self.policy, call.box, AgentConfig(max_turns=self.settings.max_turns), announce)
            traj = agent.run(query, description, trajectory_id=call.id)
            # Which host paths a command that could not start named and the sandbox hides: only the user, who
            # starts the server, can bind them, so the answer says which (while the sandbox is still there to ask).
            unseen = unseen_host_paths(call.box, command_outputs(traj))
        finally:
            with self._lock:
                self._calls.pop(call.id, None)
            if call.box is not None:
                call.box.close()
        self._keep(traj)
        if traj.termination == "crash":
            return crash_text(traj), True
        note = [
            f"note: {', '.join(unseen[:3])} exists on the host but the {self.backend} sandbox does not show it (its "
            "/tmp and /home are private): the user can start terminus mcp with --bind PATH to show it read-only"
        ] if unseen else []  # fmt: skip
        missing = no_answer_reason(traj)
        if missing:  # a broken model or endpoint is an error, not an empty result
            return "\n".join([missing, *traj.notes, *note]), True
        return "\n".join([answer_text(traj), *note]), False

    def _keep(self, traj: Trajectory) -> None:
        """Append the trajectory in collect's record (timings in the sidecar), so sessions can feed the corpus."""
        folder = self.settings.trajectories
        if folder is None:
            return
        record, timing = split_timings(traj.to_dict())
        try:
            append_jsonl(folder / "trajectories.jsonl", record)
            append_jsonl(folder / "trajectories.timings.jsonl", timing)
        except OSError as err:  # the answer is still good; losing the record is the lesser harm
            log.error("could not save trajectory %s under %s: %s", traj.id, folder, err)

    def cancel(self, call: _Call) -> None:
        """Stop one episode: no further command, and its running command killed with its sandbox. The worker
        thread then finds its command killed and the sandbox closed, and returns an answer nobody reads."""
        call.cancelled.set()
        if call.box is not None:
            try:
                call.box.close()
            except Exception as err:  # the other calls and the server go on
                log.error("could not close the sandbox of cancelled call %s: %s", call.id, err)

    def stop_all(self) -> None:
        """Stop every episode in flight: no new commands, and the running ones killed with their sandboxes."""
        with self._lock:
            calls = list(self._calls.values())
        for call in calls:
            self.cancel(call)


def crash_text(traj: Trajectory) -> str:
    """A failed episode, for the main agent: why, and what had run before it stopped."""
    lines = [f"error: the subagent stopped before its answer: {traj.error}"]
    if traj.turns:
        lines.append("Commands it ran before stopping (exit codes):")
        lines += [f"- {first_line(t.command)} ({t.exit_code})" for t in traj.turns]
    return "\n".join(lines)


def _progress(ctx: Context) -> Callable[[str], None]:
    """A hook for the worker thread: each command becomes a progress notification `$ <first line>`."""
    count = 0

    def on_command(command: str) -> None:
        nonlocal count
        count += 1
        try:
            anyio.from_thread.run(ctx.report_progress, count, None, f"$ {first_line(command)}")
        except Exception as err:  # a client that went away must not end the episode
            log.warning("progress notification not sent: %s", err)

    return on_command


def build_server(service: SubagentService) -> MCPServer:
    server = MCPServer("terminus", instructions=INSTRUCTIONS, version=__version__)  # a client shows serverInfo

    async def execution_subagent(
        query: Annotated[str, Field(description=QUERY_HELP)],
        description: Annotated[str, Field(description=DESCRIPTION_HELP)],
        ctx: Context,
    ) -> CallToolResult:
        call = _Call(new_trajectory_id())
        try:
            # abandon_on_cancel: a cancelled call (notifications/cancelled, a dropped connection, a deleted
            # session, the server stopping) returns at once, and `cancel` kills its command and sandbox.
            text, failed = await anyio.to_thread.run_sync(
                service.call, query, description, _progress(ctx), call, abandon_on_cancel=True
            )
        except anyio.get_cancelled_exc_class():
            # Closing kills the command, then removes the workspace (seconds for a large one): not on the event
            # loop, which keeps serving the other calls.
            threading.Thread(target=service.cancel, args=(call,), name=f"cancel-{call.id}", daemon=True).start()
            raise
        return CallToolResult(content=[TextContent(type="text", text=text)], is_error=failed)

    server.add_tool(execution_subagent, name=TOOL_NAME, description=TOOL_DESCRIPTION, structured_output=False)
    return server


def serve(
    settings: ServerSettings,
    http_port: int | None = None,
    host: str = "127.0.0.1",
    token: str = "",
    on_listening: Callable[[], None] | None = None,
    header_timeout_s: float = HEADER_TIMEOUT_S,
) -> None:
    """Serve until the client closes stdin, or a SIGTERM/SIGINT; then stop what is still running. Over HTTP
    (`http_port`), every request needs `token` (see `BearerTokenRequired`) and its headers within
    `header_timeout_s`; `on_listening` runs once the port is bound."""
    if http_port is not None and not token:
        raise ValueError("the HTTP transport needs a token")
    service = SubagentService(settings, make_server_policy(settings))
    server = build_server(service)
    if not settings.repo.is_dir():
        log.warning("the repository %s does not exist; every call will say so until it does", settings.repo)
    sock = listen(host, http_port) if http_port is not None else None
    if sock is not None and on_listening is not None:
        on_listening()

    def stop(signum, frame) -> None:
        # Kill the commands and remove the sandboxes, then leave at once: a graceful exit would wait for the
        # thread that reads stdin, which returns only when the client writes or closes it.
        service.stop_all()
        remove_own_root()  # os._exit skips atexit, which would remove it
        os._exit(128 + signum)

    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, stop)
    try:
        if http_port is None:
            anyio.run(serve_stdio, server)
        else:
            serve_http(server, sock, token, header_timeout_s)
    finally:
        service.stop_all()
