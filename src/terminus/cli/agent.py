"""`run`, `demo`, `exec`, `tiny-model`: the subagent on one repository, and the smoke scale's base model."""

from __future__ import annotations

import json
from pathlib import Path

import typer

from terminus.cli import BACKENDS, _fail, app
from terminus.cli_support import (
    COPY_HELP,
    REQUEST_TIMEOUT_HELP,
    RETRIES_HELP,
    copy_cap_bytes,
    copy_cap_option,
    endpoint_options,
    seconds,
)
from terminus.config import ROOT
from terminus.sandbox import SandboxError, default_backend, make_sandbox

DEMO_PROJECT = ROOT / "examples" / "demo-project"


@app.command("run")
def run_command(
    command: str = typer.Argument(..., help="Shell command to run in the sandbox."),
    repo: Path = typer.Option(Path("."), help="Repository to copy into the sandbox's workspace."),
    sandbox: str = typer.Option(None, help=f"Backend: {', '.join(BACKENDS)} (default: bwrap where installed)."),
    timeout: float = typer.Option(60.0, help="Seconds before the command is killed.", callback=seconds()),
    copy: str = typer.Option("git", help=COPY_HELP),
    max_copy_mb: int = copy_cap_option(),
) -> None:
    """Run one command in a sandbox over a copy of REPO and print what the terminal tool returns."""
    from terminus.agent.terminal import observation

    if sandbox and sandbox not in BACKENDS:
        _fail(f"unknown sandbox {sandbox!r}; choose one of {', '.join(BACKENDS)}")
    try:
        with make_sandbox(sandbox, repo, copy=copy, max_copy_bytes=copy_cap_bytes(max_copy_mb)) as box:
            typer.echo(observation(box.run(command, timeout)))
    except SandboxError as err:
        _fail(str(err))


@app.command("demo")
def demo(sandbox: str = typer.Option(None, help="Sandbox backend (default: bwrap where installed).")) -> None:
    """Run the Execution Subagent (scripted expert) on the bundled demo project and print what happened."""
    from terminus.agent.loop import ExecutionSubagent, answer_text
    from terminus.models import make_policy

    backend = sandbox or default_backend()
    query = "Run the unit tests and tell me what fails and why."
    typer.echo(f"demo project: {DEMO_PROJECT}\nsandbox: {backend}\nmain agent asks: {query}\n")
    try:
        with make_sandbox(backend, DEMO_PROJECT) as box:
            traj = ExecutionSubagent(make_policy("scripted"), box).run(query)
    except SandboxError as err:
        _fail(str(err))
    tool_outputs = [m["content"] for m in traj.messages if m["role"] == "tool"]
    for turn, output in zip(traj.turns, tool_outputs, strict=False):
        typer.echo(f"$ {turn.command}    # timeout {turn.timeout_ms} ms, took {turn.duration_s:.2f} s")
        lines = output.splitlines()
        shown = lines if len(lines) <= 12 else [*lines[:6], f"... ({len(lines) - 10} lines) ...", *lines[-4:]]
        typer.echo("\n".join(f"  | {line}" for line in shown) + "\n")
    raw = sum(len(o) for o in tool_outputs)
    answer = answer_text(traj)
    typer.echo(f"termination: {traj.termination}; the subagent saw {raw} characters of output and returns:\n")
    typer.echo(answer)


@app.command("exec")
def exec_subagent(
    repo: Path = typer.Option(..., help="Repository the subagent works on (a copy; your tree is never modified)."),
    query: str = typer.Option(..., help="What the main agent asks, e.g. 'run the tests and tell me what fails'."),
    description: str = typer.Option("", help="Optional context from the main agent."),
    policy: str = typer.Option("scripted", help="scripted | openai | transformers | vllm"),
    model: str = typer.Option(None, help="Hub id or model folder (transformers, vllm) or served model (openai)."),
    base_url: str = typer.Option(None, help="OpenAI-compatible endpoint, e.g. http://127.0.0.1:8000/v1."),
    api_key_env: str = typer.Option(None, help="Environment variable holding the endpoint's API key."),
    request_timeout: float = typer.Option(120.0, help=REQUEST_TIMEOUT_HELP, callback=seconds(0.1)),
    max_retries: int = typer.Option(3, min=0, help=RETRIES_HELP),
    sandbox: str = typer.Option(None, help=f"Backend: {', '.join(BACKENDS)} (default: bwrap where installed)."),
    max_turns: int = typer.Option(10, min=1, help="Turn limit; the last turn must give the final answer."),
    as_json: bool = typer.Option(False, "--json", help="Print the whole trajectory record as JSON."),
    copy: str = typer.Option("git", help=COPY_HELP),
    max_copy_mb: int = copy_cap_option(),
) -> None:
    """Run the Execution Subagent on any directory and print its final answer and notes."""

    from terminus.agent.loop import AgentConfig, ExecutionSubagent, answer_text
    from terminus.models import make_policy

    if not repo.is_dir():
        _fail(f"--repo {repo} does not exist or is not a folder")
    if not query.strip():
        _fail("--query is empty: say what the subagent should do, e.g. --query 'run the tests'")
    if sandbox and sandbox not in BACKENDS:
        _fail(f"unknown sandbox {sandbox!r}; choose one of {', '.join(BACKENDS)}")
    from terminus.models.openai_compat import PolicyError, api_key_from_env

    try:
        key = api_key_from_env(api_key_env, "--api-key-env")
        options = endpoint_options(policy, request_timeout, max_retries, key)
        agent_policy = make_policy(policy, model=model, base_url=base_url, **options)
    except (ValueError, PolicyError, OSError) as err:
        _fail(str(err))
    try:
        with make_sandbox(sandbox, repo, copy=copy, max_copy_bytes=copy_cap_bytes(max_copy_mb)) as box:
            traj = ExecutionSubagent(agent_policy, box, AgentConfig(max_turns=max_turns)).run(query, description)
    except SandboxError as err:
        _fail(str(err))
    if traj.termination == "crash":  # e.g. the endpoint went away: one line, non-zero exit
        _fail(f"the episode crashed: {traj.error}")
    if as_json:
        typer.echo(json.dumps(traj.to_dict(), ensure_ascii=False))
    else:
        typer.echo(answer_text(traj))


@app.command("tiny-model")
def tiny_model(
    out: Path = typer.Option(..., help="Folder to write the model to (a Hugging Face model folder)."),
    seed: int = typer.Option(0, help="Initialisation seed."),
    corpus: Path = typer.Option(None, help="Trajectories (JSON lines) to train the tokenizer on, with the prompts."),
    hidden_size: int = typer.Option(128, help="Width (heads of 32 dimensions)."),
    layers: int = typer.Option(2, help="Transformer layers."),
) -> None:
    """Build the tiny Qwen3-architecture model and tokenizer (the smoke scale's base model)."""
    from terminus.train.tiny import build_tiny_model, corpus_texts

    if corpus is not None and not corpus.is_file():
        _fail(f"--corpus {corpus} does not exist")
    texts = corpus_texts(corpus) if corpus is not None else None
    path = build_tiny_model(out, texts=texts, seed=seed, hidden_size=hidden_size, layers=layers)
    typer.echo(f"tiny model written to {path}")
