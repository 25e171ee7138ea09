"""Issue 39: a file the user gives that is broken (bytes that are not UTF-8, a line that is not JSON, a list where a
record belongs, a field of the wrong type, a YAML syntax error, an alias bomb, a model folder with no model, a blank
command) is refused with one `error:` line naming the file (and the line), never a traceback. Each case goes
through the public CLI; each reader checks where it reads."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from builders import TERMINUS, task
from terminus.cli import app
from terminus.config import ROOT
from terminus.tasks.record import write_tasks

CONFIG = ROOT / "configs/config.yaml"
TRAJECTORY = {
    "id": "a",
    "task_id": "t0",
    "parent_id": None,
    "policy": "scripted",
    "query": "q",
    "messages": [],
    "turns": [],
    "schema": "terminus.trajectory/1",
}
EVAL = {
    "key": "k",
    "main_agent": "reader",
    "subagent": "none",
    "benchmark": "repair",
    "seed": 0,
    "task_id": "t0",
    "language": "python",
    "source": "synthetic",
    "main_agent_tokens": 10,
    "subagent_episodes": [],
    "schema": "terminus.eval/1",
}
# Line 2 of each file is the broken one (line 1 is a sound record): the error must name file:2.
BROKEN = {
    "not UTF-8": (b'{"id": "\xff\xfe"}', "UTF-8"),
    "not JSON": (b'{"id": "a", ', "not valid JSON"),
    "a list": (b"[1, 2]", "not a JSON object"),
}
# A field of the wrong type, per record kind: (the record, what the error names).
WRONG_TYPE = {
    "trajectory": [
        (TRAJECTORY | {"turns": "ls; pytest"}, "'turns' is a string, expected a list"),
        (TRAJECTORY | {"messages": [{"role": "tool", "content": 5}]}, "'messages[0].content' is an integer"),
        (TRAJECTORY | {"turns": [{"command": "ls", "duration_s": "slow"}]}, "'turns[0].duration_s' is a string"),
        (TRAJECTORY | {"task_id": ["t0"]}, "'task_id' is a list"),
    ],
    "eval": [
        (EVAL | {"subagent_episodes": [{"turns": [5]}]}, "'subagent_episodes[0].turns[0]' is an integer"),
        (EVAL | {"main_agent_tokens": "many"}, "'main_agent_tokens' is a string"),
    ],
}
# command: (argv, the flag of the file under test, the kind of record it reads)
READERS = {
    "judge": (["judge", "--no-llm", "--tasks", "{tasks}", "--out", "{tmp}/v.jsonl", "--config", "{config}"],
              "--trajectories", "trajectory"),
    "judge --references": (["judge", "--no-llm", "--tasks", "{tasks}", "--out", "{tmp}/v.jsonl", "--config",
                            "{config}", "--trajectories", "{good}"], "--references", "trajectory"),
    "judge-validity": (["judge-validity", "--tasks", "{tasks}", "--out", "{tmp}/v.json", "--config", "{config}"],
                       "--trajectories", "trajectory"),
    "sft-data": (["sft-data", "--tasks", "{tasks}", "--out", "{tmp}/sft"], "--trajectories", "trajectory"),
    "tiny-model": (["tiny-model", "--out", "{tmp}/model"], "--corpus", "trajectory"),
    "case-study": (["case-study", "--out", "{tmp}/c.json"], "--records", "eval"),
    "view (trajectories)": (["view", "--out", "{tmp}/site"], "", "trajectory"),
    "view (eval records)": (["view", "--out", "{tmp}/site"], "", "eval"),
}  # fmt: skip


def _refused(result, *names: str) -> str:
    """The clean refusal: exit 2, no traceback, the last line an `error:` line naming each of `names`."""
    assert "Traceback" not in result.output, result.output
    last = result.output.strip().splitlines()[-1]
    assert result.exit_code == 2 and last.startswith("error: "), result.output
    for name in names:
        assert name in last, last
    return last


def _cases():
    for command, (_, _, kind) in READERS.items():
        for name in BROKEN:
            yield pytest.param(command, name, id=f"{command}: {name}")
        for i in range(len(WRONG_TYPE[kind])):
            yield pytest.param(command, i, id=f"{command}: wrong type {i}")


@pytest.mark.parametrize(("command", "case"), list(_cases()))
def test_a_broken_record_file_is_one_error_line_naming_file_and_line(tmp_path, command, case):
    argv, flag, kind = READERS[command]
    sound = TRAJECTORY if kind == "trajectory" else EVAL
    if isinstance(case, str):
        line, names = BROKEN[case]
    else:
        record, names = WRONG_TYPE[kind][case]
        line = json.dumps(record).encode()
    bad = tmp_path / "records.jsonl"
    bad.write_bytes(json.dumps(sound).encode() + b"\n" + line + b"\n")
    good = tmp_path / "good.jsonl"
    good.write_text(json.dumps(TRAJECTORY) + "\n")
    write_tasks(tmp_path / "tasks.jsonl", [task(split="train")])
    fill = {"tmp": tmp_path, "tasks": tmp_path / "tasks.jsonl", "config": CONFIG, "good": good}
    args = [a.format(**fill) for a in argv] + ([flag, str(bad)] if flag else [str(bad)])
    _refused(CliRunner().invoke(app, args), f"{bad}:2", names)


def test_view_checks_one_json_object_as_exec_writes_it(tmp_path):
    """`exec --trajectory` writes one indented object: view checks its fields too."""
    path = tmp_path / "episode.json"
    path.write_text(json.dumps(TRAJECTORY | {"turns": "ls"}, indent=1))
    _refused(CliRunner().invoke(app, ["view", str(path), "--out", str(tmp_path / "site")]), f"{path}:1", "'turns'")


def test_a_record_file_may_hold_line_separators_inside_strings(tmp_path):
    """Lines are split at newlines only: U+2028 and form feeds, which JSON strings may hold raw, are not breaks."""
    path = tmp_path / "t.jsonl"
    query = {"query": "a\u2028b\x0cc"}
    path.write_text("".join(json.dumps(TRAJECTORY | query | {"id": i}, ensure_ascii=False) + "\n" for i in "ab"))
    write_tasks(tmp_path / "tasks.jsonl", [task(split="train")])
    args = ["judge", "--no-llm", "--trajectories", str(path), "--tasks", str(tmp_path / "tasks.jsonl")]
    result = CliRunner().invoke(app, [*args, "--out", str(tmp_path / "v.jsonl"), "--config", str(CONFIG)])
    assert result.exit_code == 0, result.output
    assert "2 verdicts" in result.output


def _alias_bomb(levels: int = 8) -> list[str]:
    lines = ["a0: &a0 [" + ", ".join(["lol"] * 9) + "]"]
    lines += [f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 9) + "]" for i in range(1, levels + 1)]
    return lines


def test_a_non_utf8_config_is_one_error_line(tmp_path):
    config = tmp_path / "config.yaml"
    config.write_bytes(b"run: \xff\xfe\n")
    result = CliRunner().invoke(app, ["eval", "--config", str(config), "--tasks", str(tmp_path / "t.jsonl")])
    _refused(result, str(config), "not UTF-8")


def test_an_alias_bomb_config_is_refused_at_once(tmp_path):
    """9^8 lists behind nine lines: loading shares them, but checking the config against its schema walked them
    all (minutes of CPU before this fix)."""
    config = tmp_path / "config.yaml"
    config.write_text(
        "run: bomb\nanchors:\n" + "\n".join("  " + line for line in _alias_bomb()) + "\ntasks:\n  manifests: *a8\n"
    )
    start = time.monotonic()
    done = subprocess.run(
        [TERMINUS, "eval", "--config", str(config), "--tasks", str(tmp_path / "t.jsonl")],
        capture_output=True,
        text=True,
        timeout=90,
    )
    assert time.monotonic() - start < 60
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("error: ") and str(config) in last and "aliases expand" in last, last


@pytest.mark.parametrize("stage", ["sft", "grpo"])
@pytest.mark.parametrize(
    ("text", "names"),
    [
        ("learning_rate: [1, 2\nmax_steps: }\n", "not valid YAML"),
        ("\n".join(_alias_bomb()) + "\n", "aliases expand"),
        ("- a list\n", "not a mapping"),
    ],
    ids=["syntax error", "alias bomb", "a list"],
)
def test_a_broken_recipe_is_one_error_line(tmp_path, stage, text, names):
    recipe = tmp_path / "recipe.yaml"
    recipe.write_text(text)
    _refused(CliRunner().invoke(app, [stage, "--recipe", str(recipe)]), str(recipe), names)


def test_export_of_a_folder_with_no_model_is_one_error_line(tmp_path):
    (tmp_path / "empty").mkdir()
    result = CliRunner().invoke(app, ["export", "--model", str(tmp_path / "empty"), "--out", str(tmp_path / "e")])
    _refused(result, str(tmp_path / "empty"), "holds no model")


def test_run_of_a_blank_command_is_one_error_line(tmp_path):
    result = CliRunner().invoke(app, ["run", "--sandbox", "local", "--repo", str(tmp_path), "  "])
    _refused(result, "the command is empty")


@pytest.mark.parametrize("where", ["a folder", "an unwritable folder"])
def test_exec_checks_its_trajectory_path_before_the_run(tmp_path, where):
    """`exec --trajectory` is written after every turn and at the end: a path it cannot write is refused before the
    subagent runs, not after (the run was lost to IsADirectoryError)."""
    (tmp_path / "test_a.py").write_text("def test_a():\n    assert False\n")
    target = tmp_path / "out" if where == "a folder" else Path("/proc/terminus-episode.json")
    if where == "a folder":
        target.mkdir()
    args = ["exec", "--repo", str(tmp_path), "--query", "run the tests", "--sandbox", "local"]
    result = CliRunner().invoke(app, [*args, "--trajectory", str(target)])
    line = _refused(result, f"--trajectory {target}", "is a folder" if where == "a folder" else "cannot write in")
    assert result.output.strip().splitlines() == [line]  # nothing ran: no answer, no cost line
