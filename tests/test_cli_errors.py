"""One error path for the whole `terminus` command (issue 30): in every command group a mistake the user can make
prints one `error: ...` line and exits 2, whether the command finds it (a `TerminusError`) or click does (an
unknown or missing flag)."""

from __future__ import annotations

import ast
import subprocess

import pytest
import typer
from typer.testing import CliRunner

from builders import TERMINUS
from terminus.cli import app
from terminus.cli.training import trl_argv
from terminus.config import ROOT
from terminus.errors import TerminusError

CLI = ROOT / "src/terminus/cli"

# One user error per command group (the modules of terminus/cli/) and what its line must name.
MISTAKES = {
    "corpus: tasks": (["tasks", "validate", "--tasks", "{tmp}/none.jsonl", "--out", "{tmp}/v.jsonl"], "none.jsonl"),
    "corpus: collect": (["collect", "--tasks", "{tmp}/none.jsonl", "--out", "{tmp}/c.jsonl"], "none.jsonl"),
    "judging": (["judge", "--trajectories", "{tmp}/t", "--tasks", "{tmp}/none.jsonl", "--out", "{tmp}/j"], "none"),
    "evaluation": (["eval", "--config", "{tmp}/none.yaml", "--tasks", "{tmp}/t.jsonl"], "none.yaml"),
    "training: sft": (["sft", "--recipe", "{tmp}/none.yaml"], "--recipe"),
    "training: grpo": (["grpo", "--recipe"], "--recipe needs a recipe file"),
    "training: export": (["export", "--model", "{tmp}/none", "--out", "{tmp}/e"], "--model"),
    "agent: run": (["run", "--sandbox", "nosuch", "--repo", "{tmp}", "true"], "'nosuch' is not one of"),
    "agent: exec": (["exec", "--repo", "{tmp}", "--query", " "], "--query is empty"),
    "view": (["view", "{tmp}", "--out", "{tmp}/site", "--verdicts", "{tmp}/none.jsonl"], "--verdicts"),
    "hosting: mcp": (["mcp", "--policy", "nosuch"], "unknown policy 'nosuch'"),
    "hosting: serve": (["serve", "{tmp}/none"], "none"),
    "swe": (["swe", "tasks", "--instances", "{tmp}/none.json", "--out", "{tmp}/t"], "--instances"),
}


def _one_error_line(result, names: str) -> str:
    lines = result.output.strip().splitlines()
    assert result.exit_code == 2 and len(lines) == 1, result.output
    assert lines[0].startswith("error: ") and names in lines[0], lines
    assert "Traceback" not in result.output
    return lines[0]


@pytest.mark.parametrize("group", MISTAKES)
def test_each_command_group_prints_a_user_error_in_one_line(tmp_path, group):
    argv, names = MISTAKES[group]
    _one_error_line(CliRunner().invoke(app, [a.format(tmp=tmp_path) for a in argv]), names)


def _commands(command, path=()):
    for name, sub in getattr(command, "commands", {}).items():
        yield from _commands(sub, (*path, name)) if getattr(sub, "commands", None) else [(*path, name)]


def test_every_command_prints_a_usage_error_in_one_line():
    """click's own errors take the same path: an unknown flag, an unknown command. (sft and grpo pass their flags
    to TRL's parser, so an unknown one is TRL's ValueError, also one line: the training tests run that parser.)"""
    runner = CliRunner()
    commands = [c for c in _commands(typer.main.get_command(app)) if c not in (("sft",), ("grpo",))]
    assert len(commands) > 20 and ("swe", "grade") in commands
    for path in commands:
        line = _one_error_line(runner.invoke(app, [*path, "--no-such-flag"]), "--no-such-flag")
        assert line.endswith(f" {' '.join(path)} --help`)"), line  # the command's own help
    _one_error_line(runner.invoke(app, ["no-such-command"]), "no-such-command")
    _one_error_line(runner.invoke(app, ["--no-such-flag"]), "--no-such-flag")


def test_a_real_process_prints_one_line_on_stderr(tmp_path):
    done = subprocess.run(
        [TERMINUS, "swe", "tasks", "--instances", str(tmp_path / "none.json"), "--out", str(tmp_path / "t")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.splitlines() == [f"error: --instances {tmp_path / 'none.json'} does not exist"]


def test_one_handler_prints_errors():
    """No command prints its own `error:` line or exits 2 itself: they raise `TerminusError`."""
    for path in CLI.glob("*.py"):
        tree = ast.parse(path.read_text())
        names = {n.name for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)}
        assert "_fail" not in names, path
        text = path.read_text().replace(" ", "")
        if path.name != "support.py":
            assert "typer.Exit(2)" not in text and 'echo(f"error:' not in text and 'echo("error:' not in text, path


def test_the_swe_and_eval_errors_are_terminus_errors():
    from terminus.eval.cells import CellError
    from terminus.swe.families import DatasetError
    from terminus.swe.parsers import ParserError
    from terminus.swe.predictions import PredictionsError
    from terminus.swe.record import GradeError

    for error in (CellError, DatasetError, GradeError, ParserError, PredictionsError):
        assert issubclass(error, TerminusError), error


def test_recipe_names_the_trl_recipe_and_flags_take_either_spelling(tmp_path, caplog):
    recipe = str(ROOT / "configs/sft/tiny.yaml")
    assert trl_argv("sft", ["--recipe", recipe, "--max-steps", "3", "--output_dir=o"]) == [
        "--config",
        recipe,
        "--max_steps",
        "3",
        "--output_dir=o",
    ]
    assert trl_argv("grpo", [f"--recipe={recipe}", "--tasks-file", "t.jsonl"]) == [
        "--config",
        recipe,
        "--tasks_file",
        "t.jsonl",
    ]
    assert not caplog.records
    assert trl_argv("sft", ["--config", recipe]) == ["--config", recipe]  # the old spelling, deprecated
    assert "deprecated" in caplog.text and "--recipe" in caplog.text
    with pytest.raises(TerminusError, match="does not exist"):
        trl_argv("sft", ["--recipe", str(tmp_path / "none.yaml")])
