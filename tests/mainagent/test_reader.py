"""The `reader` main agent acts on what it hears: a wrong location gives a wrong edit, a silent subagent forces
direct runs, the true answer resolves without them. Real sandboxes and real test runs; the subagents are policies
that play fixed replies (no mocks of our own code). Also the VS Code contract of `execution_subagent`."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from builders import synthetic_corpus
from terminus.agent.loop import DEFAULT_PROMPTS
from terminus.eval.grid import verify
from terminus.eval.metrics import command_signatures, rerun_rate
from terminus.mainagent import parse
from terminus.mainagent.harness import SUBAGENT_TOOL, MainAgentResult, Workbench, run_main_agent
from terminus.mainagent.instance import AtWorkdir, InstanceWorkbench
from terminus.mainagent.reader import ReaderMainAgent
from terminus.models import make_policy
from terminus.sandbox import SandboxSpec, make_sandbox
from terminus.tasks.record import load_tasks

LOCAL = {"sandbox": SandboxSpec(), "subagent_turns": 10}  # the default backend; the paper's turn limit


class Replies:
    """A subagent policy that plays back replies, then repeats the last one (a deterministic stand-in)."""

    name = "replies"

    def __init__(self, *replies: dict) -> None:
        self.replies = list(replies)
        self.calls = 0

    def respond(self, messages, tools, tool_choice=None):
        self.calls += 1
        return self.replies.pop(0) if len(self.replies) > 1 else self.replies[0]


def run_call(command: str) -> dict:
    args = {"command": command, "timeout_ms": 120_000}
    return {"content": "", "tool_calls": [{"id": "c1", "function": {"name": "run_in_terminal", "arguments": args}}]}


@pytest.fixture(scope="module")
def python_tasks(tmp_path_factory):
    tasks_file = synthetic_corpus(
        tmp_path_factory.mktemp("reader"),
        {"languages": ["python"], "repos_per_language": 3, "variants": ["fail"]},
        {"train": 0.0, "val": 0.0, "test": 1.0},
        run="readertest",
    )
    tasks = [t for t in load_tasks(tasks_file) if t.meta.get("fix") and t.task_type == "test-execution"]
    return tasks, tasks_file


def episode(task, tasks_file: Path, policy) -> tuple[MainAgentResult, bool]:
    result, tree = run_main_agent(ReaderMainAgent(), task, tasks_file, **LOCAL, subagent_policy=policy)
    try:
        return result, verify(task, tree, SandboxSpec())
    finally:
        shutil.rmtree(tree.parent, ignore_errors=True)


def test_the_true_answer_resolves_without_direct_calls(python_tasks):
    tasks, tasks_file = python_tasks
    for task in tasks:
        result, resolved = episode(task, tasks_file, make_policy("scripted"))
        assert resolved and result.error is None, result.final_message
        assert result.direct_terminal_calls == 0 and result.subagent_calls >= 2
        fix = task.meta["fix"]
        assert result.edits[-1]["path"] == fix["file"] and result.edits[-1]["new"] == fix["new"]


def test_a_wrong_location_gives_a_wrong_edit_and_no_resolve(python_tasks):
    tasks, tasks_file = python_tasks
    task, wrong = None, None
    for candidate in tasks:  # a line of the faulty file that computes something, but not the faulty line
        fix = candidate.meta["fix"]
        lines = (candidate.workspace_path(tasks_file) / fix["file"]).read_text().splitlines()
        others = [i for i, t in enumerate(lines, 1) if i != fix["line"] and re.search(r"return .+ [-+*] ", t)]
        if others:
            task, wrong = candidate, others[0]
            break
    assert task is not None, "no corpus task has a second computing line"
    fix = task.meta["fix"]
    answer = (
        f"<final_answer>\nCommand: python3 -m pytest -q\nSummary: 1 failed, 4 passed; first failure at "
        f"{fix['file']}:{wrong}; exit code 1.\n</final_answer>"
    )
    result, resolved = episode(task, tasks_file, Replies({"content": answer}))
    wrong_text = (task.workspace_path(tasks_file) / fix["file"]).read_text().splitlines()[wrong - 1]
    assert not resolved
    assert result.edits and {e["path"] for e in result.edits} == {fix["file"]}
    assert all(wrong_text in (e["old"], e["new"]) for e in result.edits)  # every edit (and undo) is at that line
    assert fix["old"] not in [e["old"] for e in result.edits]


def test_a_silent_subagent_makes_the_reader_run_the_tests_itself(python_tasks):
    tasks, tasks_file = python_tasks
    task = tasks[0]
    silent = Replies(run_call("python3 -m pytest -q"), {"content": "<final_answer>\n</final_answer>"})
    result, resolved = episode(task, tasks_file, silent)
    assert result.subagent_calls == 1  # it stops asking a subagent that said nothing
    assert result.direct_terminal_calls >= 2  # the run it did not hear about, then the verification
    assert rerun_rate(result.subagent_episodes, result.direct_commands) == 1.0
    assert resolved  # from the raw output, as a real agent would
    told, _ = episode(task, tasks_file, make_policy("scripted"))
    assert result.tokens > 1.2 * told.tokens


def test_rerun_signatures_see_through_wrappers():
    assert command_signatures("(cd pkg && python3 -m pytest -q)") == {"python -m pytest"}
    assert command_signatures("python3 -m pytest -q 2>&1") == {"python -m pytest"}
    assert command_signatures("cargo test --offline --no-fail-fast  (full log kept in the sandbox, filtered)") == {
        "cargo test"
    }
    episodes = [{"commands": ["find . -maxdepth 3", "go test -v ./..."]}, {"commands": ["go test ./..."]}]
    direct = [{"command": "go test ./...", "after": 2}]
    assert rerun_rate(episodes, direct) == 0.5  # after the second answer only
    assert rerun_rate([], direct) is None
    # a call that ran nothing is out of the denominator (the main agent's own run after it is a fallback)
    assert rerun_rate([{"commands": []}, *episodes], [{"command": "go test ./...", "after": 3}]) == 0.5
    assert rerun_rate([{"commands": []}], direct) is None


def test_the_vscode_contract(tmp_path):
    """VS Code's execution_subagent: {query, description} both required; the exact last-turn message."""
    assert SUBAGENT_TOOL["function"]["parameters"]["required"] == ["query", "description"]
    last = yaml.safe_load(DEFAULT_PROMPTS.read_text())["last_turn"].strip()
    assert last == "OK, your allotted iterations are finished. Show the <final_answer>."
    (tmp_path / "a.txt").write_text("x\n")
    policy = Replies(run_call("echo 1"), run_call("echo 2"), run_call("echo 3"))
    with make_sandbox(SandboxSpec(), tmp_path) as box:
        bench = Workbench(box, SandboxSpec(), policy, subagent_turns=3)
        result = MainAgentResult(main_agent="t")
        assert "description" in bench.call("execution_subagent", {"query": "run it"}, result, "p")
        assert result.subagent_calls == 0 and policy.calls == 0
        bench.call("execution_subagent", {"query": "echo things", "description": "Echoing"}, result, "p")
    trajectory = result.subagent_episodes[0]["trajectory"]
    assert trajectory["messages"][1]["content"] == "Execution query: \necho things"
    assert trajectory["messages"][-2]["content"] == last  # injected on the third (last) turn, tools withdrawn
    assert len(trajectory["turns"]) == 2 and trajectory["termination"] == "turn_limit"
    assert json.loads(json.dumps(SUBAGENT_TOOL)) == SUBAGENT_TOOL


def test_the_submission_is_a_diff_that_applies(python_tasks, tmp_path):
    tasks, tasks_file = python_tasks
    task = tasks[0]
    result, tree = run_main_agent(
        ReaderMainAgent(), task, tasks_file, **LOCAL, subagent_policy=make_policy("scripted")
    )
    shutil.rmtree(tree.parent, ignore_errors=True)
    fix = task.meta["fix"]
    assert result.termination == "done" and f"+++ b/{fix['file']}" in result.diff
    assert f"-{fix['old']}\n+{fix['new']}\n" in result.diff
    repo = tmp_path / "repo"
    shutil.copytree(task.workspace_path(tasks_file), repo)
    subprocess.run(["git", "apply", "-"], input=result.diff, text=True, cwd=repo, check=True)
    assert fix["new"] in (repo / fix["file"]).read_text().splitlines()


def test_the_file_tools_stay_inside_the_repository(tmp_path):
    (tmp_path / "repo").mkdir()
    (tmp_path / "repo" / "a.txt").write_text("inside\n")
    (tmp_path / "secret.txt").write_text("outside\n")
    with make_sandbox(SandboxSpec(), tmp_path / "repo") as box:
        (Path(box.workspace) / "link").symlink_to(tmp_path / "secret.txt")
        bench, result = Workbench(box, SandboxSpec(), None, 10), MainAgentResult(main_agent="t")
        for path in ("../secret.txt", str(tmp_path / "secret.txt"), "link"):
            assert "outside the repository" in bench.call("read_file", {"path": path}, result, "p")
        assert bench.call("read_file", {"path": "a.txt"}, result, "p") == "inside\n"
        assert bench.call("read_file", {"path": "."}, result, "p").splitlines() == ["a.txt", "link"]
        edit = {"path": "../secret.txt", "old": "outside", "new": "changed"}
        assert bench.call("edit_file", edit, result, "p").startswith("error")
    assert (tmp_path / "secret.txt").read_text() == "outside\n"


def test_the_file_tools_work_at_an_images_repository_folder(tmp_path):
    """In an image the repository is at the image's own path (AtWorkdir): the same tools, through the sandbox and
    confined to that folder; the subagent shares the sandbox. (tests/swe runs this inside a docker image.)"""
    (tmp_path / "app").mkdir()
    (tmp_path / "app" / "calc.py").write_text("total = 1 + 1\n")
    (tmp_path / "app" / "latin.txt").write_bytes(b"caf\xe9\n")
    (tmp_path / "top.txt").write_text("outside the app\n")
    with make_sandbox(SandboxSpec(), tmp_path) as box:
        bench, result = (
            InstanceWorkbench(AtWorkdir(box, f"{box.inside_workspace}/app"), SandboxSpec(), None, 10),
            MainAgentResult("t"),
        )
        assert bench.call("read_file", {"path": "."}, result, "p").splitlines() == ["calc.py", "latin.txt"]
        assert "outside the repository" in bench.call("read_file", {"path": "../top.txt"}, result, "p")
        edit = {"path": "../top.txt", "old": "outside", "new": "inside"}
        assert bench.call("edit_file", edit, result, "p") == "error: no file ../top.txt"
        edit = {"path": "calc.py", "old": "1", "new": "2"}
        assert bench.call("edit_file", edit, result, "p") == "error: `old` must occur exactly once in the file"
        edit = {"path": "latin.txt", "old": "caf", "new": "tea"}
        assert "not UTF-8" in bench.call("edit_file", edit, result, "p")
        assert bench.call("read_file", {"path": "missing.py"}, result, "p") == "error: no file missing.py"
        edit = {"path": "calc.py", "old": "1 + 1", "new": "2 + 2"}
        assert bench.call("edit_file", edit, result, "p") == "ok"
        assert bench.call("read_file", {"path": "calc.py"}, result, "p") == "total = 2 + 2\n"
        assert box.run("cat calc.py", 10).output == "total = 2 + 2\n"  # in the shell's folder, app
        with bench.subagent_box() as sub_box:
            assert sub_box is bench.box
    assert result.edits == [{"path": "calc.py", "old": "1 + 1", "new": "2 + 2"}]
    assert (tmp_path / "top.txt").read_text() == "outside the app\n"


def test_a_turn_budget_ends_the_episode_and_says_so(python_tasks):
    tasks, tasks_file = python_tasks
    result, tree = run_main_agent(ReaderMainAgent(), tasks[0], tasks_file, **LOCAL, subagent_policy=None, max_turns=2)
    shutil.rmtree(tree.parent, ignore_errors=True)
    assert result.turns == 2 and result.termination == "turn_limit" and "Turn budget of 2" in result.final_message


def test_reading_takes_the_failure_line_not_the_log_lines():
    files = [
        "go.mod",
        "thermostat.go",
        "thermostat_test.go",
        "pkg/geo/tests/test_geo.c",
        "pkg/geo/src/geo.c",
        "test/geometry.test.js",
        "src/geometry.js",
    ]
    go = (
        "--- FAIL: TestDegreeHoursTypical (0.00s)\n    thermostat_test.go:7: [core] batch 000: 17 records ok\n"
        "    thermostat_test.go:15: DegreeHours(3, 4) = 7, want 12\nFAIL\n[exit code 1]"
    )
    assert parse.locations(go, files)[0] == ("thermostat_test.go", 15)
    assert parse.passed(go) is False and parse.passed("ok  \tx\t0.01s\n[exit code 0]") is True
    c = "tests/test_geo.c:35: FAIL border_tiles(34) == 132, got 34\n"
    assert parse.locations(c, files, prefer="pkg/geo") == [("pkg/geo/tests/test_geo.c", 35)]
    node = "  location: '/workspace/test/geometry.test.js:11:1'\n    at Ctx (/workspace/test/geometry.test.js:13:10)"
    assert parse.locations(node, files) == [("test/geometry.test.js", 13), ("test/geometry.test.js", 11)]
    assert parse.passed("pytest: 2 failed, 5 passed") is False and parse.passed("(no final answer)") is None
    lines = ["func DegreeHours(delta, hours int) int {", "\treturn delta + hours", "}"]
    assert parse.definition("DegreeHours", lines) == 1 and list(parse.body(lines, 1)) == [2]
    edits = parse.operator_edits("thermostat.go", lines, [2])
    assert [e.new for e in edits] == ["\treturn delta - hours", "\treturn delta * hours"]
