"""The `terminus` command: one subcommand per stage (they land with their issues)."""

from __future__ import annotations

import sys
from pathlib import Path

import typer

from terminus.sandbox import BACKENDS, SandboxError, default_backend, make_sandbox

app = typer.Typer(add_completion=False, no_args_is_help=True, help=__doc__)

DEMO_PROJECT = Path(__file__).resolve().parents[2] / "examples" / "demo-project"


def _fail(message: str) -> None:
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(2)


@app.command("run")
def run_command(
    command: str = typer.Argument(..., help="Shell command to run in the sandbox."),
    repo: Path = typer.Option(Path("."), help="Repository to copy into the sandbox's workspace."),
    sandbox: str = typer.Option(None, help=f"Backend: {', '.join(BACKENDS)} (default: bwrap where installed)."),
    timeout: float = typer.Option(60.0, help="Seconds before the command is killed."),
) -> None:
    """Run one command in a sandbox over a copy of REPO and print what the terminal tool returns."""
    from terminus.agent.terminal import observation

    if sandbox and sandbox not in BACKENDS:
        _fail(f"unknown sandbox {sandbox!r}; choose one of {', '.join(BACKENDS)}")
    try:
        with make_sandbox(sandbox, repo) as box:
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
    sandbox: str = typer.Option(None, help=f"Backend: {', '.join(BACKENDS)} (default: bwrap where installed)."),
    max_turns: int = typer.Option(10, min=1, help="Turn limit; the last turn must give the final answer."),
    as_json: bool = typer.Option(False, "--json", help="Print the whole trajectory record as JSON."),
) -> None:
    """Run the Execution Subagent on any directory and print its final answer and notes."""
    import json

    from terminus.agent.loop import AgentConfig, ExecutionSubagent, answer_text
    from terminus.models import make_policy

    if not repo.is_dir():
        _fail(f"--repo {repo} does not exist or is not a folder")
    if sandbox and sandbox not in BACKENDS:
        _fail(f"unknown sandbox {sandbox!r}; choose one of {', '.join(BACKENDS)}")
    from terminus.models.openai_compat import PolicyError

    try:
        agent_policy = make_policy(policy, model=model, base_url=base_url)
    except (ValueError, PolicyError, OSError) as err:
        _fail(str(err))
    try:
        with make_sandbox(sandbox, repo) as box:
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
) -> None:
    """Build the tiny Qwen3-architecture model and tokenizer (the smoke scale's base model)."""
    from terminus.train.tiny import build_tiny_model

    path = build_tiny_model(out, seed=seed)
    typer.echo(f"tiny model written to {path}")


tasks_app = typer.Typer(add_completion=False, no_args_is_help=True, help="Build and validate the task corpus.")
app.add_typer(tasks_app, name="tasks")


def _config(path: Path | None) -> dict:
    from terminus.config import ConfigError, load_config

    try:
        return load_config(path)
    except ConfigError as err:
        _fail(str(err))


@tasks_app.command("build")
def tasks_build(
    config: Path = typer.Option(Path("configs/config.yaml"), help="Experiment config (smoke default)."),
    out: Path = typer.Option(..., help="Task file to write (JSON lines); snapshots go to repos/ next to it."),
    quiet: bool = typer.Option(False, help="No progress bar."),
) -> None:
    """Build the corpus: synthetic projects, registry mutants, manifests; queries; splits by repository."""
    from terminus.tasks.build import CorpusError, build_corpus, corpus_stats, format_stats
    from terminus.tasks.manifest import ManifestError

    cfg = _config(config)
    try:
        tasks = build_corpus(cfg, out, show_progress=not quiet)
    except (CorpusError, ManifestError, ValueError) as err:
        _fail(str(err))
    typer.echo(format_stats(corpus_stats(tasks)))
    typer.echo(f"wrote {out}")


def main() -> None:  # pragma: no cover
    sys.exit(app())
