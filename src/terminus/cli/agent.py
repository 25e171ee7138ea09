"""`run`, `demo`, `exec`, `tiny-model`: the subagent on one repository, and the smoke scale's base model."""

from __future__ import annotations

import contextlib
import json
import re
import shutil
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import typer

from terminus.agent.cost import PRICES, Price, cost_line, cost_summary, find_price, local_endpoint
from terminus.agent.loop import AgentConfig, ExecutionSubagent, answer_text, no_answer_reason
from terminus.agent.parsing import FormatError, parse_tool_calls
from terminus.agent.terminal import observation
from terminus.cli import _run, app
from terminus.cli.support import (
    BIND_HELP,
    COPY_HELP,
    REQUEST_TIMEOUT_HELP,
    RETRIES_HELP,
    TURN_LIMIT,
    check_output,
    copy_cap_bytes,
    copy_cap_option,
    endpoint_options,
    project_spec,
    pull_option,
    seconds,
    set_option,
    unseen_note,
    write_resolved,
)
from terminus.config import ROOT
from terminus.errors import TerminusError
from terminus.models import make_policy
from terminus.models.openai_compat import api_key_from_env
from terminus.runspec import LOCAL_POLICIES
from terminus.sandbox import Backend, SandboxSpec, default_backend, make_sandbox
from terminus.sandbox.pull import Pull
from terminus.settings import REQUEST_TIMEOUT, Config, TinyModel, field_default
from terminus.train.tiny import build_tiny_model, corpus_texts

DEMO_PROJECT = ROOT / "examples" / "demo-project"
# What a terminal obeys rather than prints: C0 controls but tab and newline (ESC among them), DEL, and the C1
# controls U+0080-U+009F (U+009B is CSI, U+009D OSC to many terminals). A model's answer, and the command output it
# quotes, may hold any of them: an OSC 52 sequence writes the user's clipboard, others set the window title or
# clear the screen. The sandbox strips ESC sequences from output, not C1, and a model's own text is never stripped.
_CONTROLS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
_C1 = re.compile(r"[\x7f-\x9f]")


def shown(text: str) -> str:
    """`text` safe to print on a terminal: each control character as a visible escape (ESC as `^[`, DEL as `^?`,
    C1 as `\\x9b`), tab and newline kept. Only what is printed: files written keep the exact text."""
    return _CONTROLS.sub(_visible, text)


def _visible(match: re.Match) -> str:
    code = ord(match.group())
    if code < 0x20 or code == 0x7F:
        return "^" + chr(code ^ 0x40)
    return f"\\x{code:02x}"


def shown_json(payload: dict) -> str:
    """`payload` as JSON safe to print: json.dumps escapes C0 controls itself; DEL and C1 become \\u escapes too,
    so the JSON reads back the same."""
    return _C1.sub(lambda m: f"\\u{ord(m.group()):04x}", json.dumps(payload, ensure_ascii=False))


@app.command("run")
def run_command(
    command: str = typer.Argument(..., help="Shell command to run in the sandbox."),
    repo: Path = typer.Option(Path("."), help="Repository to copy into the sandbox's workspace."),
    sandbox: Backend = typer.Option(None, help="Sandbox backend (default: bwrap where installed)."),
    pull: Pull = pull_option(),
    timeout: float = typer.Option(60.0, help="Seconds before the command is killed.", callback=seconds()),
    copy: str = typer.Option("git", help=COPY_HELP),
    max_copy_mb: int = copy_cap_option(),
) -> None:
    """Run one command in a sandbox over a copy of REPO and print what the terminal tool returns."""
    if not command.strip():
        raise TerminusError("the command is empty: give a shell command to run, e.g. terminus run 'pytest -q'")
    spec = SandboxSpec(sandbox, pull=pull)
    with make_sandbox(spec, repo, copy=copy, max_copy_bytes=copy_cap_bytes(max_copy_mb)) as box:
        typer.echo(shown(observation(box.run(command, timeout))))


@app.command("demo")
def demo(sandbox: Backend = typer.Option(None, help="Sandbox backend (default: bwrap where installed).")) -> None:
    """Run the Execution Subagent (scripted expert) on the bundled demo project and print what happened."""
    backend = sandbox or default_backend()
    query = "Run the unit tests and tell me what fails and why."
    typer.echo(f"demo project: {DEMO_PROJECT}\nsandbox: {backend}\nmain agent asks: {query}\n")
    with make_sandbox(SandboxSpec(backend), DEMO_PROJECT) as box:
        traj = ExecutionSubagent(make_policy("scripted"), box, AgentConfig(max_turns=TURN_LIMIT)).run(query)
    tool_outputs = [m["content"] for m in traj.messages if m["role"] == "tool"]
    for turn, output in zip(traj.turns, tool_outputs, strict=False):
        typer.echo(shown(f"$ {turn.command}    # timeout {turn.timeout_ms} ms, took {turn.duration_s:.2f} s"))
        typer.echo(shown("\n".join(f"  | {line}" for line in excerpt(output.splitlines())) + "\n"))
    raw = sum(len(o) for o in tool_outputs)
    answer = answer_text(traj)
    typer.echo(f"termination: {traj.termination}; the subagent saw {raw} characters of output and returns:\n")
    typer.echo(shown(answer))


class Progress:
    """A status line on the terminal while an episode runs: the turn, the time so far and what is happening (the
    command being run, or the wait for the model; `model=False`, the scripted expert, waits for no model). Redrawn
    in place on stderr by a background thread."""

    def __init__(self, max_turns: int, stream=None, model: bool = True) -> None:
        self.stream = stream or sys.stderr
        self.max_turns = max_turns
        self.start = time.monotonic()
        self.replies = 0  # the model's replies so far: a command runs in the turn of the reply that asked for it
        self.waiting = True
        self.thinking = "waiting for the model" if model else "choosing the next command"
        self.activity = self.thinking
        self.stop = threading.Event()
        self.lock = threading.Lock()
        self.thread = threading.Thread(target=self._loop, daemon=True)

    def __enter__(self) -> Progress:
        self._draw()
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop.set()
        self.thread.join()
        with self.lock:
            self.stream.write("\r\x1b[K")
            self.stream.flush()

    def command(self, command: str) -> None:
        self.waiting = False
        self.activity = "$ " + shown(command.splitlines()[0]) if command.strip() else "$ (empty command)"
        self._draw()  # now, so that a command quicker than a redraw is still seen

    def message(self, message: dict) -> None:
        if message.get("role") == "assistant":
            self.replies += 1
        if message.get("role") in ("tool", "user"):
            self.waiting, self.activity = True, self.thinking
            self._draw()

    def line(self) -> str:
        turn = min(self.replies + self.waiting, self.max_turns)
        return (
            f"terminus exec · turn {turn}/{self.max_turns} · {time.monotonic() - self.start:5.1f} s · {self.activity}"
        )

    def _draw(self) -> None:
        width = shutil.get_terminal_size((100, 20)).columns - 1
        with self.lock:
            self.stream.write("\r\x1b[K" + self.line()[:width])
            self.stream.flush()

    def _loop(self) -> None:
        while not self.stop.wait(0.2):
            self._draw()


def verbose_printer(stream=None) -> Callable[[dict], None]:
    """Prints each message of the conversation as it happens (the system prompt by its size only)."""
    stream = stream or sys.stderr

    def show(message: dict) -> None:
        role, text = message.get("role"), shown((message.get("content") or "").rstrip())
        if role == "system":
            print(f"[system prompt, {len(text):,} characters]", file=stream)
        elif role == "user":
            print(f"[to the subagent]\n{text}\n", file=stream)
        elif role == "assistant":
            if text:
                print(f"[subagent]\n{text}", file=stream)
            try:
                calls = parse_tool_calls(message) if message.get("tool_calls") else []
            except FormatError:
                calls = []
            for call in calls:
                args = call.arguments if isinstance(call.arguments, dict) else {}
                command = shown(str(args.get("command", call.arguments)))
                print(f"$ {command}    # timeout {args.get('timeout_ms')} ms", file=stream)
        elif role == "tool":
            print("\n".join(f"  | {line}" for line in excerpt(text.splitlines())) + "\n", file=stream)
        stream.flush()

    return show


def excerpt(lines: list[str], keep: int = 12) -> list[str]:
    """A long output's head and tail, as `terminus demo` shows it."""
    if len(lines) <= keep:
        return lines
    return [*lines[:6], f"... ({len(lines) - 10} lines) ...", *lines[-4:]]


def _price(policy: str, model: str | None, price_in, price_out, prices: Path | None):
    if (price_in is None) != (price_out is None):
        raise TerminusError("--price-in and --price-out go together (dollars per million tokens in and out)")
    if price_in is not None:
        return Price(price_in, price_out, source=f"${price_in:g}/${price_out:g} per million tokens, as given")
    if policy != "openai":
        return None
    return find_price(model, prices or PRICES)


@app.command("exec")
def exec_subagent(
    repo: Path = typer.Option(..., help="Repository the subagent works on (a copy; your tree is never modified)."),
    query: str = typer.Option(..., help="What the main agent asks, e.g. 'run the tests and tell me what fails'."),
    description: str = typer.Option("", help="Optional context from the main agent."),
    policy: str = typer.Option("scripted", help="scripted | openai | transformers | vllm"),
    model: str = typer.Option(None, help="Hub id or model folder (transformers, vllm) or served model (openai)."),
    base_url: str = typer.Option(
        None,
        help="OpenAI-compatible endpoint, e.g. http://127.0.0.1:8000/v1. One on this machine (localhost, 127.x, ::1) "
        "serves a local model: $0, unless the price table lists the model or --price-in/--price-out are given.",
    ),
    api_key_env: str = typer.Option(None, help="Environment variable holding the endpoint's API key."),
    request_timeout: float = typer.Option(float(REQUEST_TIMEOUT), help=REQUEST_TIMEOUT_HELP, callback=seconds(0.1)),
    max_retries: int = typer.Option(3, min=0, help=RETRIES_HELP),
    sandbox: Backend = typer.Option(None, help="Sandbox backend (default: bwrap where installed)."),
    pull: Pull = pull_option(),
    max_turns: int = typer.Option(TURN_LIMIT, min=1, help="Turn limit; the last turn must give the final answer."),
    as_json: bool = typer.Option(False, "--json", help="Print the whole trajectory record (and its cost) as JSON."),
    verbose: bool = typer.Option(False, "--verbose", "-v", help="Print the conversation on stderr as it happens."),
    trajectory: Path = typer.Option(
        None, help="Save the trajectory record (JSON) to FILE after every turn, and when the run ends however it ends."
    ),
    max_tokens: int = typer.Option(None, min=1, help="Stop cleanly once this many model tokens (in + out) are spent."),
    max_cost: float = typer.Option(
        None, min=0.0, help="Stop cleanly once this many dollars are spent (needs a price)."
    ),
    price_in: float = typer.Option(
        None, min=0.0, help="Dollars per million input tokens (default: configs/prices.yaml)."
    ),
    price_out: float = typer.Option(None, min=0.0, help="Dollars per million output tokens."),
    prices: Path = typer.Option(None, help="A price table of your own (layout: configs/prices.yaml)."),
    copy: str = typer.Option("git", help=COPY_HELP),
    max_copy_mb: int = copy_cap_option(),
    bind: list[str] = typer.Option(None, "--bind", help=BIND_HELP),
) -> None:
    """Run the Execution Subagent on any directory and print its final answer, its notes and what it cost.

    On a terminal it shows the turn, the time so far and the command being run; piped, or with --json, it prints
    only the result."""

    if not repo.is_dir():
        raise TerminusError(f"--repo {repo} does not exist or is not a folder")
    if not query.strip():
        raise TerminusError("--query is empty: say what the subagent should do, e.g. --query 'run the tests'")
    if prices is not None and not prices.is_file():
        raise TerminusError(f"--prices {prices} does not exist")
    if trajectory is not None:
        check_output(trajectory, "--trajectory")  # written after every turn: a bad path must not cost the run
    price = _price(policy, model, price_in, price_out, prices)
    if max_cost is not None and price is None:
        why = f"no price is listed for model {model!r}" if policy == "openai" else f"the {policy} policy has none"
        raise TerminusError(
            f"--max-cost needs a price: {why} (give --price-in and --price-out, dollars per million tokens)"
        )

    try:
        key = api_key_from_env(api_key_env, "--api-key-env")
        options = endpoint_options(policy, request_timeout, max_retries, key)
        agent_policy = make_policy(policy, model=model, base_url=base_url, **options)
    except OSError as err:  # the system refused a file or model folder: its message names it
        raise TerminusError(str(err)) from err
    config = AgentConfig(
        max_turns=max_turns,
        max_tokens=max_tokens,
        max_cost=max_cost,
        price=(price.input, price.output) if price else None,
    )
    calls_model = policy != "scripted"  # the scripted expert picks its commands itself: no model, no cost
    local_model = policy in LOCAL_POLICIES or (policy == "openai" and price is None and local_endpoint(base_url))
    live = not as_json and not verbose and sys.stderr.isatty() and sys.stdout.isatty()
    progress = Progress(max_turns, model=calls_model) if live else None
    listeners = [f for f in (progress and progress.message, verbose and verbose_printer()) if f]
    spec = project_spec(SandboxSpec(sandbox, pull=pull), repo, bind, copy, "terminus exec")
    with make_sandbox(spec, repo, copy=copy, max_copy_bytes=copy_cap_bytes(max_copy_mb)) as box:
        agent = ExecutionSubagent(
            agent_policy,
            box,
            config,
            on_command=progress.command if progress else None,
            on_message=(lambda m: [f(m) for f in listeners]) if listeners else None,
        )

        def outcome(t) -> dict:
            """What exec adds to the record (--json, --trajectory): its cost, why there is no answer, the folder."""
            cost = cost_summary(t, price, local_model, calls_model)
            return {"cost": cost, "no_answer": no_answer_reason(t), "repo": str(repo.resolve())}

        with progress or contextlib.nullcontext():
            traj = agent.run(query, description, save_to=trajectory, saved_extra=outcome)
        for line in unseen_note(box, traj):
            typer.echo(f"terminus exec: {line}", err=True)
    if traj.termination == "crash":  # e.g. the endpoint went away: one line, non-zero exit
        raise TerminusError(f"the episode crashed: {shown(str(traj.error))}")
    extra = outcome(traj)
    if as_json:
        typer.echo(shown_json(traj.to_dict() | extra))
    else:  # no answer: why, with its count, where the answer would be (a main agent reads both, and the exit status)
        typer.echo(shown("\n".join([extra["no_answer"], *traj.notes]) if extra["no_answer"] else answer_text(traj)))
        typer.echo(shown(f"\n{cost_line(extra['cost'])}"))
    if extra["no_answer"]:
        raise typer.Exit(1)


@app.command("tiny-model")
def tiny_model(
    out: Path = typer.Option(..., help="Folder to write the model to (a Hugging Face model folder)."),
    seed: int = typer.Option(None, help="Initialisation seed. Default: the config's `seed` (0 without a config)."),
    corpus: Path = typer.Option(None, help="Trajectories (JSON lines) to train the tokenizer on, with the prompts."),
    hidden_size: int = typer.Option(None, help="Width (heads of 32 dimensions). Default: model.tiny.hidden_size."),
    layers: int = typer.Option(None, help="Transformer layers. Default: model.tiny.layers."),
    config: Path = typer.Option(
        None, help="Experiment config: its `seed` and `model.tiny` (a flag overrides its key)."
    ),
    sets: list[str] = set_option(),
) -> None:
    """Build the tiny Qwen3-architecture model and tokenizer (the smoke scale's base model)."""
    if corpus is not None and not corpus.is_file():
        raise TerminusError(f"--corpus {corpus} does not exist")
    run = _run(config, sets=sets) if config is not None else None
    if sets and run is None:
        raise TerminusError("--set changes a config: give --config too")
    tiny = run.cfg.model.tiny if run else TinyModel()
    seed = seed if seed is not None else (run.seed if run else field_default(Config, "seed"))
    hidden_size, layers = hidden_size or tiny.hidden_size, layers or tiny.layers
    if run:
        write_resolved(run, out)
    texts = corpus_texts(corpus) if corpus is not None else None
    path = build_tiny_model(out, texts=texts, seed=seed, hidden_size=hidden_size, layers=layers)
    typer.echo(f"tiny model written to {path}")
