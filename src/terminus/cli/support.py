"""What every `terminus` subcommand shares: one-line errors, and the options of commands that call an endpoint."""

from __future__ import annotations

import dataclasses
import math
import os
import tempfile
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import typer
from typer.core import TyperGroup

from terminus.agent.trajectory import Trajectory, command_outputs
from terminus.collect.runner import start_failed
from terminus.errors import TerminusError, debug_enabled
from terminus.io import write_text_atomic
from terminus.runspec import RunSpec
from terminus.sandbox import SandboxSpec, default_backend
from terminus.sandbox.copying import COPY_CAP_FLAG, DEFAULT_MAX_COPY_MB, MB
from terminus.sandbox.docker import default_image
from terminus.sandbox.projectenv import checked_binds, project_env, unseen_host_paths
from terminus.sandbox.spec import Backend
from terminus.settings import Collect, field_default

# The defaults of flags of commands that may run without a config, read from the typed config (their one home).
TURN_LIMIT = field_default(Collect, "max_turns")
EPISODES_AT_ONCE = field_default(Collect, "concurrency")

SET_HELP = (
    "KEY=VALUE over the config, before it is validated (repeatable): a dotted key (eval.concurrency=8), the value "
    "read as YAML. An unknown key is an error naming it."
)


def pull_option():
    """`--pull` of every command that offers `--sandbox`: when docker pulls an image, over the config's
    `sandbox_pull` (`terminus.sandbox.pull`)."""
    return typer.Option(
        None,
        help="When docker pulls an image: missing (when absent, on first use), always, never. Default: the config's "
        "sandbox_pull (missing).",
        show_default=False,
    )


def set_option():
    """`-c/--set KEY=VALUE` of every command that takes --config: merged into the config inside `load_run`."""
    return typer.Option([], "-c", "--set", help=SET_HELP, show_default=False)


def write_resolved(run: RunSpec, out: Path | str, folder: bool = False) -> Path:
    """The config this stage ran with, resolved (every default, `--set` applied, paths absolute), beside its output:
    `<out>.config.yaml` for a file, `<out>/config.yaml` for a folder. Written when the stage runs, never when the
    workflow is read; `terminus config show` prints the same."""
    out = Path(out)
    path = out / "config.yaml" if folder else out.with_name(out.name + ".config.yaml")
    write_text_atomic(path, run.resolved_yaml())
    return path


REQUEST_TIMEOUT_HELP = "Seconds an endpoint may take to answer one request before it is retried."
RETRIES_HELP = "Retries per endpoint call (429 honours Retry-After; 5xx, timeouts and unusable replies back off)."
COPY_HELP = "git: the files git sees (tracked, untracked not ignored); all: every file. Special files never."
COPY_CAP_HELP = (
    "Largest folder (MB) copied whole into the sandbox: one that is not a git work tree, or any with --copy all "
    "(a git work tree's listing is not capped). 0: no cap."
)


# click's UsageError (an unknown or missing flag, a bad value), reached through typer's public BadParameter:
# typer >= 0.22 carries its own copy of click, so `click.UsageError` is not the class it raises.
USAGE_ERROR = typer.BadParameter.__base__


class OneLineErrors(TyperGroup):
    """The one error path of every `terminus` command. Our own errors (`TerminusError`, raised anywhere below a
    command) and click's usage errors (an unknown or missing flag, a bad value) become one `error: ...` line and
    exit code 2; with --debug or TERMINUS_DEBUG=1 our errors' traceback comes first. Any other exception is a bug
    and keeps its traceback. (Subcommands' flags are parsed inside `invoke`, the top level's in `make_context`.)"""

    def make_context(self, info_name, args, parent=None, **extra):
        with one_line_errors():
            return super().make_context(info_name, args, parent=parent, **extra)

    def invoke(self, ctx):
        with one_line_errors():
            return super().invoke(ctx)


@contextmanager
def one_line_errors() -> Iterator[None]:
    try:
        yield
    except TerminusError as err:
        if debug_enabled():
            traceback.print_exc()
        typer.echo(f"error: {err}", err=True)
        raise typer.Exit(2) from None
    except USAGE_ERROR as err:
        if type(err).__name__ == "NoArgsIsHelpError":  # a bare group: click prints its help, which is what was asked
            raise
        where = err.ctx.command_path if err.ctx else "terminus"
        typer.echo(f"error: {err.format_message()} (see `{where} --help`)", err=True)
        raise typer.Exit(2) from None


def copy_cap_option(envvar: str | None = "TERMINUS_MAX_COPY_MB"):
    """`--max-copy-mb` of the commands that copy a user's folder (`run`, `exec`, `mcp`)."""
    return typer.Option(DEFAULT_MAX_COPY_MB, COPY_CAP_FLAG, min=0, envvar=envvar, help=COPY_CAP_HELP)


def copy_cap_bytes(max_copy_mb: int) -> int | None:
    return max_copy_mb * MB if max_copy_mb else None


def seconds(minimum: float = 0.0) -> Callable:
    """A timeout option's check: a finite number of seconds, above zero and at least `minimum`. (click's own
    range check lets nan through, and prints a box rather than one line.)"""

    def check(ctx: typer.Context, param: typer.CallbackParam, value: float | None) -> float | None:
        if value is None or ctx.resilient_parsing:
            return value
        if not math.isfinite(value) or value <= 0 or value < minimum:
            least = f"at least {minimum:g}" if minimum > 0 else "above 0"
            raise TerminusError(f"{param.opts[0]} {value:g} is not a timeout: give a finite number of seconds {least}")
        return value

    return check


def endpoint_options(policy: str, request_timeout: float | None, max_retries: int | None, api_key: str | None) -> dict:
    """The keyword arguments that bound an endpoint policy's calls (only the `openai` policy calls one)."""
    if policy != "openai":
        return {}
    options = {"api_key": api_key} if api_key else {}
    if request_timeout is not None:
        options["timeout_s"] = float(request_timeout)
    if max_retries is not None:
        options["max_retries"] = int(max_retries)
    return options


RETRY_FAILED_HELP = "Run again the episodes whose record says they crashed or their endpoint failed (default)."
FORCE_HELP = "Discard an output made from other inputs (policy, model, task file, samples, config) and start afresh."


def override_endpoint_limits(
    run: RunSpec, section: str, request_timeout: float | None, max_retries: int | None
) -> RunSpec:
    """The run with the flags over the config section's `request_timeout`/`max_retries` (a new spec: a loaded config
    is never changed); eval's agent entries get theirs, or the section's, so each names its own limits."""
    part = getattr(run.cfg, section)
    flags = {"request_timeout": request_timeout, "max_retries": max_retries}
    part = part.model_copy(update={k: v for k, v in flags.items() if v is not None})
    if section == "eval":

        def limited(spec):
            own = {k: v if v is not None else getattr(spec, k) for k, v in flags.items()}
            return spec.model_copy(update={k: v if v is not None else getattr(part, k) for k, v in own.items()})

        part = part.model_copy(
            update={
                "main_agents": [limited(a) for a in part.main_agents],
                "subagents": [limited(s) for s in part.subagents],
            }
        )
    return run.with_cfg(run.cfg.model_copy(update={section: part}))


def outcome_line(records: list[dict], out, what: str) -> str:
    """The counts of the file just written (not of this run alone); episodes that never started (their sandbox or
    setup failed: `collect.runner.start_failed`) apart from those that crashed."""
    answered = sum(1 for r in records if r.get("termination") == "final_answer")
    unstarted = [r for r in records if start_failed(r)]
    crashed = [r for r in records if r.get("termination") == "crash" and not start_failed(r)]
    line = f"{len(records)} {what} in {out} ({answered} with a final answer"
    if unstarted:
        line += f"; {len(unstarted)} did not start, a rerun retries them; first: {unstarted[0].get('error')}"
    if crashed:
        line += f"; {len(crashed)} crashed, rerun to retry them; first: {crashed[0].get('error')}"
    return line + ")"


def check_output(path: Path | str, flag: str, kind: str = "file") -> None:
    """One error line, before any work starts, when `path` cannot be written as the output that `flag` names: a
    `kind` "file" that is an existing folder, a "folder" (of files the command writes) that is an existing file,
    or a path whose nearest existing folder cannot be written (a file in the way, no permission, a read-only
    file system: tried by creating and removing a file there). A command that found out when it wrote its output,
    after grading or running, lost that work."""
    path = Path(path)
    if kind == "file" and path.is_dir():
        raise TerminusError(f"{flag} {path} is a folder; give the path of a file")
    if kind == "folder" and path.exists() and not path.is_dir():
        raise TerminusError(f"{flag} {path} exists and is not a folder")
    folder = path if kind == "folder" else path.parent
    while not folder.exists() and not folder.is_symlink() and folder != folder.parent:
        folder = folder.parent
    if not folder.is_dir():
        raise TerminusError(f"{flag} {path}: {folder} is not a folder")
    try:
        fd, probe = tempfile.mkstemp(dir=folder, prefix=".terminus-write-check-")
    except OSError as err:
        raise TerminusError(f"{flag} {path}: cannot write in {folder} ({err.strerror})") from None
    os.close(fd)
    os.unlink(probe)


BIND_HELP = (
    "HOST[:INSIDE]: a host path shown read-only in the sandbox (repeatable; INSIDE defaults to HOST): an "
    "interpreter or toolchain under /home or /tmp, which bwrap keeps private. The repository's own .venv and "
    "node_modules are found and bound at the workspace by themselves (bwrap, docker), with a note on stderr."
)


def project_spec(spec: SandboxSpec, repo: Path, binds: list[str] | None, copy: str, who: str) -> SandboxSpec:
    """`spec` with the user's `--bind`s (checked against the repository: `projectenv.checked_binds`) and the
    project's own environment (`projectenv.project_env`), each folder found told on stderr as `who: note`."""
    backend = spec.backend or default_backend()
    if backend in (Backend.DOCKER, Backend.APPTAINER) and not spec.image:
        default_image(str(backend))  # a sandbox that cannot start is the one error, before any note
    given = checked_binds(binds, repo)
    if given and not backend.takes_binds:
        raise TerminusError(f"--bind: the {backend} sandbox takes no binds; use --sandbox bwrap or docker")
    spec = dataclasses.replace(spec, binds=(*spec.binds, *given))
    env = project_env(repo, spec, backend, copy)
    for note in env.notes:
        typer.echo(f"{who}: {note}", err=True)
    return dataclasses.replace(spec, binds=(*spec.binds, *env.binds))


def unseen_note(box, traj: Trajectory) -> list[str]:
    """A line naming the host paths that commands which could not start named and the sandbox hides, with the
    flag that shows them; [] when there are none."""
    unseen = unseen_host_paths(box, command_outputs(traj))
    if not unseen:
        return []
    return [
        f"{', '.join(unseen[:3])} exists on the host but the {box.name} sandbox does not show it (its /tmp and /home "
        "are private): --bind PATH shows it read-only"
    ]
