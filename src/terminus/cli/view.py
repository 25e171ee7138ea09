"""`view`: a trajectories file, an eval cell or a run folder as static HTML pages; `dataset export`: a run
folder's episodes as a Hugging Face `datasets` folder."""

from __future__ import annotations

from pathlib import Path

import typer

from terminus.cli import app, dataset_app
from terminus.collect.dataset import export
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


@dataset_app.command("export")
def dataset_export(
    run: Path = typer.Option(..., help="A run folder (results/<run>, results/cached): the episodes it holds."),
    out: Path = typer.Option(..., help="A new (or empty) folder for the dataset, its card and stamp."),
) -> None:
    """Write the run's teacher trajectories (split by repository: train, validation, test) and eval episodes (eval)
    as a `datasets` folder with a dataset card (fields, licence, provenance); load it with
    `datasets.load_from_disk(OUT)`."""
    if not run.is_dir():
        raise TerminusError(f"--run {run} is not a folder")
    counts = export(run, out)
    typer.echo(f"{out}: " + ", ".join(f"{name} {n}" for name, n in counts.items()))
