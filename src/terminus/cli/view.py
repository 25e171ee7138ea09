"""`view`: a trajectories file, an eval cell or a run folder as static HTML pages."""

from __future__ import annotations

from pathlib import Path

import typer

from terminus.cli import app
from terminus.errors import TerminusError
from terminus.view import write_site


@app.command("view")
def view(
    path: Path = typer.Argument(..., help="A trajectories file (JSON lines), an eval cell file, or a run folder."),
    out: Path = typer.Option(..., help="Folder for index.html and the episode pages (created; pages overwritten)."),
    verdicts: Path = typer.Option(None, help="Verdicts (JSON lines) to show; default: the run's teacher verdicts."),
    tasks: Path = typer.Option(None, help="Task file, for the facts found and missed; default: the run's."),
) -> None:
    """Write static HTML (no server, nothing loaded from outside) showing each episode: the query, every command with
    its exit status, timing and output, the final answer and the verdict. Open OUT/index.html in any browser."""

    for given, flag in ((verdicts, "--verdicts"), (tasks, "--tasks")):
        if given is not None and not given.is_file():
            raise TerminusError(f"{flag} {given} does not exist")
    try:
        index = write_site(path, out, verdicts, tasks)
    except OSError as err:
        raise TerminusError(f"cannot write {out}: {err}") from err
    typer.echo(f"{index.resolve()}")
