"""`terminus exec` as a daily tool: progress on a terminal and silence when piped, --verbose, --trajectory, the cost
line, --max-tokens/--max-cost stopping cleanly; `terminus --version`; `terminus mcp --print-config`."""

from __future__ import annotations

import json
import os
import pty
import re
import select
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from terminus.agent.cost import PriceError, find_price, load_prices

TERMINUS = [sys.executable, "-m", "terminus.cli"]
QUERY = "run the tests and tell me what fails"


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> Path:
    repo = tmp_path_factory.mktemp("project")
    (repo / "pyproject.toml").write_text("[project]\nname = 'calc'\nversion = '0'\n")
    (repo / "test_calc.py").write_text(
        "import time\n\n\ndef test_ok():\n    time.sleep(1.5)\n\n\ndef test_add():\n    assert 1 + 1 == 3\n"
    )
    return repo


def terminus(*args: str, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run([*TERMINUS, *args], capture_output=True, text=True, timeout=300, **kwargs)


def on_a_terminal(args: list[str]) -> str:
    """Everything the command writes to a pseudo-terminal (stdout and stderr both on it), as a person sees it."""
    main, child = pty.openpty()
    proc = subprocess.Popen([*TERMINUS, *args], stdin=child, stdout=child, stderr=child, close_fds=True)
    os.close(child)
    chunks = []
    while True:
        ready, _, _ = select.select([main], [], [], 120)
        if not ready:
            proc.kill()
            break
        try:
            data = os.read(main, 4096)
        except OSError:  # the child closed the terminal
            break
        if not data:
            break
        chunks.append(data)
    proc.wait(timeout=60)
    os.close(main)
    assert proc.returncode == 0, b"".join(chunks).decode(errors="replace")[-2000:]
    return b"".join(chunks).decode(errors="replace")


def test_exec_on_a_terminal_shows_turn_time_and_command(project):
    screen = on_a_terminal(["exec", "--repo", str(project), "--query", QUERY, "--sandbox", "local"])
    # the status line, redrawn in place: the turn, the time so far, the command being run or the wait for the model
    assert "terminus exec · turn 1/10 ·" in screen and "turn 3/10 · " in screen
    assert "choosing the next command" in screen and "waiting for the model" not in screen  # the scripted expert
    assert "turn 2/10 ·   1." in screen and "· $ python3 -m pytest" in screen  # the 1.5 s test run, as it runs
    assert " s · " in screen and "\r\x1b[K" in screen
    assert "Command: python3 -m pytest" in screen and "test_add" in screen
    assert screen.rstrip().splitlines()[-1].startswith("cost: 0 model calls, 2 commands, 0 tokens in, 0 out, $0.0000")


def test_exec_piped_prints_only_the_result(project, tmp_path):
    saved = tmp_path / "episode.json"
    done = terminus("exec", "--repo", str(project), "--query", QUERY, "--sandbox", "local", "--trajectory", str(saved))
    assert done.returncode == 0, done.stderr
    assert "turn " not in done.stderr and "\x1b" not in done.stdout + done.stderr
    assert done.stdout.startswith("<final_answer>") and done.stdout.rstrip().splitlines()[-1].startswith("cost: ")
    record = json.loads(saved.read_text())  # saved, whole, atomically (no temporary file left beside it)
    assert record["schema"] == "terminus.trajectory/1" and record["termination"] == "final_answer"
    assert record["cost"]["commands"] == len(record["turns"]) == 2 and record["no_answer"] is None
    assert record["repo"] == str(project.resolve())
    assert [p.name for p in tmp_path.iterdir()] == ["episode.json"]
    as_json = terminus("exec", "--repo", str(project), "--query", QUERY, "--sandbox", "local", "--json")
    payload = json.loads(as_json.stdout)
    assert payload["cost"] == {"model_calls": 0, "commands": 2, "tokens_in": 0, "tokens_out": 0, "dollars": 0.0,
                               "price": "no model: the scripted expert"}  # fmt: skip
    assert payload["no_answer"] is None
    assert as_json.stderr == ""


def test_exec_verbose_prints_the_conversation_as_it_happens(project):
    done = terminus("exec", "--repo", str(project), "--query", QUERY, "--sandbox", "local", "--verbose")
    assert done.returncode == 0, done.stderr
    err = done.stderr
    assert "[system prompt," in err and re.search(r"\[to the subagent\]\nExecution query:\s*" + QUERY, err)
    assert "$ python3 -m pytest" in err and "  | " in err and "[exit code 1]" in err
    assert err.index("$ python3 -m pytest") < err.index("[exit code 1]") < err.index("[subagent]\n<final_answer>")
    assert done.stdout.startswith("<final_answer>")


def test_max_cost_stops_a_run_cleanly(project, tiny_model, tmp_path):
    """In process (CliRunner), so that the tiny model's libraries load once."""
    from typer.testing import CliRunner

    from terminus.cli import app

    def exec_(*args: str):
        base = ["exec", "--repo", str(project), "--query", QUERY, "--sandbox", "local", "--max-turns", "5"]
        return CliRunner().invoke(app, [*base, "--policy", "transformers", "--model", str(tiny_model), *args])

    saved = tmp_path / "t.json"
    done = exec_("--max-cost", "0.000001", "--price-in", "1", "--price-out", "2", "--trajectory", str(saved))
    assert done.exit_code == 1, done.output  # no answer: said, and the exit status says so too
    assert done.stdout.startswith("no final answer: the token or cost budget was spent\n")
    record = json.loads(saved.read_text())
    assert record["termination"] == "budget" and "stopped at its cost budget" in record["notes"][-1]
    assert record["no_answer"] == "no final answer: the token or cost budget was spent"
    assert record["cost"]["model_calls"] == 1 and record["cost"]["dollars"] > 0
    assert sum(m["role"] == "assistant" for m in record["messages"]) == 1  # no model call after the budget
    assert "stopped at its cost budget" in done.stdout  # the note, for the main agent
    dollars = (record["prompt_tokens"] * 1 + record["completion_tokens"] * 2) / 1e6
    assert done.stdout.rstrip().splitlines()[-1].endswith(f"${dollars:.4f} ($1/$2 per million tokens, as given)")


def test_no_final_answer_says_why_with_its_count(project, tiny_model, tmp_path):
    """The tiny model's replies are never a tool call or an answer: exec and --json name the termination and its
    count where the answer would be, and exit non-zero, so a main agent tells a broken model from an empty result."""
    from typer.testing import CliRunner

    from terminus.cli import app

    base = ["exec", "--repo", str(project), "--query", QUERY, "--sandbox", "local", "--policy", "transformers"]
    base += ["--model", str(tiny_model)]
    done = CliRunner().invoke(app, [*base, "--max-turns", "8"])
    assert done.exit_code == 1, done.output
    assert done.stdout.startswith("no final answer: 3 malformed tool calls\n"), done.stdout
    assert "gave no final answer" not in done.stdout
    as_json = CliRunner().invoke(app, [*base, "--max-turns", "2", "--json"])
    record = json.loads(as_json.stdout)
    assert as_json.exit_code == 1 and record["termination"] == "turn_limit"
    assert record["no_answer"] == "no final answer: the turn limit was reached (2 model replies)"
    assert record["cost"]["model_calls"] == 2 and record["cost"]["dollars"] == 0.0  # a local model


def test_a_local_endpoint_costs_nothing():
    from terminus.agent.cost import local_endpoint

    for url in ("http://127.0.0.1:8000/v1", "http://localhost:8000/v1", "http://[::1]:8000/v1", "127.0.0.2:9/v1"):
        assert local_endpoint(url), url
    for url in ("https://api.openai.com/v1", "http://10.0.0.5:8000/v1", "http://localhost.example.com/v1", None):
        assert not local_endpoint(url), url


def test_the_token_budget_is_checked_before_each_model_call():
    from terminus.agent.cost import budget_note
    from terminus.agent.trajectory import Trajectory

    traj = Trajectory(
        id="t", task_id=None, parent_id=None, policy="p", query="q", prompt_tokens=900, completion_tokens=99
    )
    assert budget_note(traj, 1000, None, None) is None
    traj.completion_tokens = 100
    assert (
        budget_note(traj, 1000, None, None)
        == "The subagent stopped at its token budget: 1,000 model tokens used of 1,000."
    )
    assert budget_note(traj, None, 0.01, (5.0, 50.0)) is None  # $0.0095
    traj.completion_tokens = 200
    assert "cost budget: $0.0145 spent of $0.0100" in budget_note(traj, None, 0.01, (5.0, 50.0))


def test_exec_refuses_a_cost_budget_without_a_price(project):
    from typer.testing import CliRunner

    from terminus.cli import app

    base = ["exec", "--repo", str(project), "--query", QUERY, "--policy", "openai", "--model", "my-own-model"]
    no_price = CliRunner().invoke(app, [*base, "--base-url", "http://127.0.0.1:9/v1", "--max-cost", "1"])
    assert no_price.exit_code == 2 and no_price.output.startswith("error: --max-cost needs a price")
    assert len(no_price.output.strip().splitlines()) == 1


def test_prices_are_found_by_name_and_dated(tmp_path):
    as_of, models = load_prices()
    assert as_of[:2] == "20" and models
    assert find_price("gpt-4o-mini").input == models["gpt-4o-mini"][0]
    assert find_price("claude-sonnet-4-5-20250929").output == models["claude-sonnet-4-5"][1]  # a dated snapshot
    assert find_price("gpt-5-mini-2025-08-07").input == models["gpt-5-mini"][0]  # the longest listed prefix
    assert find_price("Qwen/Qwen3-4B") is None and find_price(None) is None
    own = tmp_path / "prices.yaml"
    own.write_text("as_of: '2030-01-01'\nmodels:\n  terminus: {input: 0.1, output: 0.2}\n")
    price = find_price("terminus", own)
    assert (price.input, price.output) == (0.1, 0.2) and "2030-01-01" in price.source
    own.write_text("models: [1, 2]\n")
    with pytest.raises(PriceError, match="cannot read the price table"):
        find_price("terminus", own)


def test_version():
    import terminus as package
    from terminus import __version__

    done = terminus("--version")
    where = Path(package.__file__).resolve().parent  # the install that ran: a clone's src/, a venv's site-packages
    assert done.returncode == 0 and done.stdout.strip() == f"terminus {__version__} ({where})"


def test_mcp_print_config_names_this_install(tmp_path):
    exe = Path(sys.executable).parent / "terminus"
    if not exe.is_file():
        pytest.skip("no terminus executable beside this interpreter")
    flags = ["--policy", "openai", "--model", "terminus", "--base-url", "http://127.0.0.1:8000/v1"]

    def run(client: str) -> str:
        command = [str(exe), "mcp", "--print-config", client, *flags]
        return subprocess.run(command, capture_output=True, text=True, timeout=60, check=True).stdout

    assert run("claude").strip() == f"claude mcp add terminus -- {exe} mcp " + " ".join(flags)
    codex = tomllib.loads(run("codex"))["mcp_servers"]["terminus"]
    assert codex["command"] == str(exe) and codex["args"] == ["mcp", *flags] and codex["tool_timeout_sec"] == 600
    vscode = json.loads(run("vscode"))["servers"]["terminus"]
    assert vscode["command"] == str(exe) and vscode["args"] == ["mcp", "--repo", "${workspaceFolder}", *flags]
    bad = subprocess.run([str(exe), "mcp", "--print-config", "emacs"], capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and bad.stderr.startswith("error: --print-config 'emacs'")
