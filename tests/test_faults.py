"""Bad input and crashes from the command line (issue 16): one `error:` line naming the key or flag and the fix;
tracebacks only with --debug / TERMINUS_DEBUG=1, or for real bugs."""

from __future__ import annotations

import os
import subprocess

import pytest
import typer
import yaml
from typer.testing import CliRunner

from builders import TERMINUS, cli_args
from terminus.cli import app
from terminus.cli.support import OneLineErrors
from terminus.config import ConfigError, load_config
from terminus.errors import TerminusError


def _config(tmp_path, **sections) -> str:
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump({"run": "t", "tasks": {}} | sections))
    return str(path)


@pytest.mark.parametrize("run", ["..", ".", "a/b", ".hidden"])
def test_run_is_a_plain_name(tmp_path, run):
    with pytest.raises(ConfigError, match=r"\brun: "):
        load_config(_config(tmp_path, run=run))


def test_an_llm_main_agent_needs_a_model(tmp_path):
    path = _config(tmp_path, eval={"main_agents": [{"name": "gpt", "kind": "llm"}]})
    with pytest.raises(ConfigError, match=r"eval\.main_agents\.0\.model: required for a main agent of kind llm"):
        load_config(path)
    result = CliRunner().invoke(app, ["eval", "--config", path, "--tasks", str(tmp_path / "t.jsonl")])
    assert result.exit_code == 2 and "model: required for a main agent of kind llm" in result.output
    assert "KeyError" not in result.output and "Traceback" not in result.output


def test_unknown_keys_in_agent_specs_are_rejected(tmp_path):
    subagents = [{"name": "none", "policy": "none"}, {"name": "q", "policy": "vllm", "modle": "Qwen/Qwen3-4B"}]
    with pytest.raises(ConfigError, match=r"eval\.subagents\.1\.modle: unknown key"):
        load_config(_config(tmp_path, eval={"subagents": subagents}))
    mains = [{"name": "m", "kind": "replay", "modle": "x"}]
    with pytest.raises(ConfigError, match=r"eval\.main_agents\.0\.modle: unknown key"):
        load_config(_config(tmp_path, eval={"main_agents": mains}))


def test_endpoint_limits_are_config_keys_with_defaults(tmp_path):
    cfg = load_config(_config(tmp_path, judge={"max_retries": 0}))
    assert cfg["judge"]["max_retries"] == 0 and cfg["judge"]["request_timeout"] == 120
    assert cfg["collect"]["max_retries"] == 3 and cfg["eval"]["request_timeout"] == 120
    with pytest.raises(ConfigError, match=r"eval\.request_timeout"):
        load_config(_config(tmp_path, eval={"request_timeout": 0}))


def test_a_missing_key_names_what_exists(tmp_path, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    result = CliRunner().invoke(app, cli_args("exec", repo=tmp_path, query="q", policy="openai", model="gpt-5"))
    assert result.exit_code == 2
    assert "--api-key-env NAME" in result.output and "OPENAI_API_KEY" in result.output
    assert "--api-key " not in result.output and "--api-key." not in result.output
    assert "--api-key-env" in {o for p in typer.main.get_command(app).commands["exec"].params for o in p.opts}


@pytest.mark.parametrize("command", ["exec", "collect", "judge", "eval"])
def test_every_endpoint_command_has_the_limits(command):
    options = {o for p in typer.main.get_command(app).commands[command].params for o in p.opts}
    assert {"--request-timeout", "--max-retries"} <= options


def test_a_blank_query_is_rejected(tmp_path):
    result = CliRunner().invoke(app, ["exec", "--repo", str(tmp_path), "--query", "   "])
    assert result.exit_code == 2 and "--query is empty" in result.output


@pytest.mark.timeout(90)
def test_a_crash_is_one_line_unless_debug(fault_endpoint, tmp_path):
    """The observed case: a 15-47 line traceback before the one-line `error:` (real process: real stderr)."""
    fault_endpoint.script = ["500"]
    options = fault_endpoint.policy_options
    args = [TERMINUS, *cli_args("exec", repo=tmp_path, query="q", **options, max_retries=0, sandbox="local")]
    env = {k: v for k, v in os.environ.items() if k != "TERMINUS_DEBUG"}

    def run(argv, **extra):
        return subprocess.run(argv, capture_output=True, text=True, timeout=60, env=env | extra)

    plain = run(args)
    assert plain.returncode == 2
    assert len(plain.stderr.strip().splitlines()) == 1 and plain.stderr.startswith("error:"), plain.stderr
    assert "HTTP 500" in plain.stderr
    debug = run([args[0], "--debug", *args[1:]])
    assert debug.returncode == 2 and "Traceback" in debug.stderr and "error:" in debug.stderr
    assert "Traceback" in run(args, TERMINUS_DEBUG="1").stderr


def test_our_errors_are_one_line_and_bugs_keep_their_traceback():
    demo = typer.Typer(cls=OneLineErrors)

    @demo.command()
    def ours() -> None:
        raise TerminusError("config x.yaml: key y is wrong; set it to z")

    @demo.command()
    def bug() -> None:
        raise KeyError("model")

    result = CliRunner().invoke(demo, ["ours"])
    assert result.exit_code == 2 and result.output == "error: config x.yaml: key y is wrong; set it to z\n"
    result = CliRunner().invoke(demo, ["bug"])
    assert isinstance(result.exception, KeyError)  # not swallowed: a bug stays visible


@pytest.mark.parametrize(
    ("key", "entries", "named"),
    [
        ("subagents", [{"name": "none", "policy": "none"}, {"name": "s", "policy": "scripted"}] * 2, "named 'none'"),
        ("main_agents", [{"name": "r", "kind": "reader"}, {"name": "r", "kind": "replay"}], "named 'r'"),
        ("seeds", [0, 1, 0], "0 twice"),
    ],
)
def test_repeated_eval_names_are_refused_in_one_line(tmp_path, key, entries, named):
    """Two subagents of one name made two cells of one name, and one of them was silently dropped."""
    path = _config(tmp_path, eval={key: entries})
    with pytest.raises(ConfigError, match=rf"eval\.{key} has .*{named}"):
        load_config(path)
    result = CliRunner().invoke(app, ["eval", "--config", path, "--tasks", str(tmp_path / "t.jsonl")])
    lines = result.output.strip().splitlines()
    assert result.exit_code == 2 and len(lines) == 1 and lines[0].startswith("error: "), result.output
    assert f"eval.{key} has" in lines[0] and "unique" in lines[0]


def _timeout_options(command, path=()) -> list[tuple[tuple[str, ...], str]]:
    """(subcommand path, flag) of every option of every `terminus` command whose name says it is a timeout."""
    found = []
    for name, sub in getattr(command, "commands", {}).items():
        found += _timeout_options(sub, (*path, name))
    for param in getattr(command, "params", []):
        if param.param_type_name == "option" and "timeout" in param.name:
            found.append((path, param.opts[0]))
    return found


def test_every_timeout_option_refuses_non_positive_and_non_finite_values(tmp_path):
    """`terminus run --timeout -5`, `0` or `nan` became a 0.1 s timeout; now each is one `error:` line."""
    options = _timeout_options(typer.main.get_command(app))
    assert {(("run",), "--timeout"), (("exec",), "--request-timeout"), (("mcp",), "--request-timeout")} <= set(options)
    assert {(("serve",), "--startup-timeout"), (("eval",), "--request-timeout")} <= set(options)
    runner = CliRunner()
    for path, flag in options:
        for value in ("-5", "0", "nan", "inf", "-inf"):
            result = runner.invoke(app, [*path, flag, value])
            lines = result.output.strip().splitlines()
            assert result.exit_code == 2 and len(lines) == 1, (path, flag, value, result.output)
            assert lines[0].startswith(f"error: {flag} {float(value):g} is not a timeout: give a finite number"), lines
    done = runner.invoke(app, ["run", "--sandbox", "local", "--repo", str(tmp_path), "--timeout", "0.5", "sleep 3"])
    assert done.exit_code == 0 and "timed out after 0.5" in done.output, done.output
