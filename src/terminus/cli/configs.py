"""`config show` (the resolved config) and `config schema` (the JSON schema generated from the typed config)."""

from __future__ import annotations

import json
from pathlib import Path

import typer

from terminus.cli import _run, config_app
from terminus.cli.support import set_option
from terminus.config import SCHEMA
from terminus.errors import TerminusError
from terminus.io import write_text_atomic
from terminus.settings import schema


@config_app.command("show")
def show_command(
    config: Path = typer.Option(Path("configs/config.yaml"), help="Experiment config."),
    sets: list[str] = set_option(),
) -> None:
    """Print the config as a stage runs it (every default filled, --set applied, `{run}` and paths resolved) as
    YAML on stdout."""
    typer.echo(_run(config, sets=sets).resolved_yaml(), nl=False)


def schema_text() -> str:
    return json.dumps(schema(), indent=2, ensure_ascii=False) + "\n"


@config_app.command("schema")
def schema_command(
    out: Path = typer.Option(None, help=f"File to write (default: print; the committed one is {SCHEMA.name})."),
    check: bool = typer.Option(False, "--check", help="Exit 1 when the committed schema is not what the code makes."),
) -> None:
    """The experiment config's JSON schema, generated from the typed config (terminus.settings): every key with its
    type, default and description. Regenerate the committed file: `terminus config schema --out <its path>`."""
    text = schema_text()
    if check:
        if not SCHEMA.is_file() or SCHEMA.read_text() != text:
            raise TerminusError(
                f"{SCHEMA} is not what terminus.settings generates: run `terminus config schema --out`"
            )
        return
    if out is None:
        typer.echo(text, nl=False)
        return
    write_text_atomic(out, text)
    typer.echo(f"wrote {out}", err=True)
