"""The `terminus` command: one subcommand per stage, plus `exec`, `mcp`, `serve` and `swe`. The commands only parse
and dispatch; each stage's logic lives in its room. They are grouped by stage in this package's modules."""

from __future__ import annotations

import sys
from pathlib import Path

import typer

import terminus
from terminus import __version__
from terminus.cli.support import OneLineErrors
from terminus.errors import TerminusError, set_debug
from terminus.runspec import RunSpec, load_run
from terminus.sandbox import Backend, SandboxSpec
from terminus.sandbox.pull import Pull

# Every command is registered one way: a decorator (`@app.command(...)`, `@tasks_app.command(...)`,
# `@swe_app.command(...)`) in the module of its group, which this package imports at its end. The command groups
# are made here, beside `app`.
app = typer.Typer(add_completion=False, no_args_is_help=True, help=__doc__, cls=OneLineErrors)
swe_app = typer.Typer(add_completion=False, no_args_is_help=True)
app.add_typer(swe_app, name="swe", help="SWE-bench-family instances: grade, validate, corpus tasks.")
tasks_app = typer.Typer(add_completion=False, no_args_is_help=True, help="Build and validate the task corpus.")
app.add_typer(tasks_app, name="tasks")
config_app = typer.Typer(add_completion=False, no_args_is_help=True, help="The experiment config: resolved, schema.")
app.add_typer(config_app, name="config")
dataset_app = typer.Typer(add_completion=False, no_args_is_help=True, help="The episodes of a run as an open dataset.")
app.add_typer(dataset_app, name="dataset")


def _version(value: bool) -> None:
    """The version and where this install lives: a clone, a venv or a user install may each hold one."""
    if value:
        typer.echo(f"terminus {__version__} ({Path(terminus.__file__).resolve().parent})")
        raise typer.Exit()


@app.callback()
def _options(
    debug: bool = typer.Option(False, "--debug", help="Tracebacks for errors too (or TERMINUS_DEBUG=1)."),
    version: bool = typer.Option(
        False, "--version", callback=_version, is_eager=True, help="Print the version and the install path, and exit."
    ),
):
    set_debug(debug)


def _run(
    path: Path | None, sandbox: Backend | None = None, sets: list[str] | None = None, pull: Pull | None = None
) -> RunSpec:
    """The run's spec, built once per command and handed down: the config (with the command's `--set KEY=VALUE`
    merged in, validated, every default filled) and its sandbox (`sandbox`, a --sandbox flag, over the config's
    backend; the config's image; `pull`, a --pull flag, over its `sandbox_pull`)."""
    return load_run(path, sandbox, tuple(sets or ()), pull)


def _sandbox(
    sandbox: Backend | None, config: Path | None, sets: list[str] | None = None, pull: Pull | None = None
) -> SandboxSpec:
    """--sandbox when given, over the config's `sandbox` and with its `sandbox_image` (when --config is given); else
    the default backend and image."""
    if config is None:
        if sets:
            raise TerminusError("--set changes a config: give --config too")
        return SandboxSpec(sandbox, pull=pull)
    return _run(config, sandbox, sets, pull).sandbox


# The commands, registered as their modules are imported (in this order, which `terminus --help` lists).
from terminus.cli import agent, configs, corpus, evaluation, judging, training, view  # noqa: E402, F401, I001
from terminus.cli import hosting, swe  # noqa: E402, F401


def main() -> None:  # pragma: no cover
    sys.exit(app())
