"""What every `terminus` subcommand shares: one-line errors, and the options of commands that call an endpoint."""

from __future__ import annotations

import traceback

import typer
from typer.core import TyperGroup

from terminus.errors import TerminusError, debug_enabled

REQUEST_TIMEOUT_HELP = "Seconds an endpoint may take to answer one request before it is retried."
RETRIES_HELP = "Retries per endpoint call (429 honours Retry-After; 5xx, timeouts and unusable replies back off)."
COPY_HELP = "git: the files git sees (tracked, untracked not ignored); all: every file. Special files never."


class OneLineErrors(TyperGroup):
    """Our own errors (`TerminusError`) become one `error: ...` line and exit code 2; with --debug or
    TERMINUS_DEBUG=1 their traceback comes first. Any other exception is a bug and keeps its traceback."""

    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except TerminusError as err:
            if debug_enabled():
                traceback.print_exc()
            typer.echo(f"error: {err}", err=True)
            raise typer.Exit(2) from None


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


def override_endpoint_limits(cfg: dict, section: str, request_timeout: float | None, max_retries: int | None) -> dict:
    """Flags over the config section's `request_timeout`/`max_retries`; eval's agent specs inherit them."""
    part = cfg[section]
    if request_timeout is not None:
        part["request_timeout"] = request_timeout
    if max_retries is not None:
        part["max_retries"] = max_retries
    if section == "eval":
        for spec in part["main_agents"] + part["subagents"]:
            for key, flag in (("request_timeout", request_timeout), ("max_retries", max_retries)):
                spec[key] = flag if flag is not None else spec.get(key, part[key])
    return cfg


def outcome_line(records: list[dict], out, what: str) -> str:
    """The counts of the file just written (not of this run alone)."""
    answered = sum(1 for r in records if r.get("termination") == "final_answer")
    crashed = [r for r in records if r.get("termination") == "crash"]
    line = f"{len(records)} {what} in {out} ({answered} with a final answer"
    if crashed:
        line += f"; {len(crashed)} crashed, rerun to retry them; first: {crashed[0].get('error')}"
    return line + ")"
