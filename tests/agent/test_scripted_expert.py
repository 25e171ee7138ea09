"""The scripted expert through the real loop and sandbox, on real projects: its answers state the true facts."""

from __future__ import annotations

import shutil

import pytest

from terminus.agent.loop import ExecutionSubagent
from terminus.models import make_policy
from terminus.sandbox import default_backend, make_sandbox

from .projects import cmake_project, go_project, node_project, python_project, rust_project

QUERY = "Build the project, run the unit tests and tell me what fails and why."
# (maker, toolchain binary, facts per variant: substrings the answer must contain)
CASES = {
    "python": (python_project, "python3", {
        "pass": ["pytest: 3 passed"],
        "fail": ["2 failed, 1 passed", "tests/test_sums.py::test_add", "tests/test_sums.py::test_add_negative",
                 "AssertionError at tests/test_sums.py:5"],
        "broken": ["collection error: SyntaxError at ledger/sums.py:2"],
    }),
    "node": (node_project, "node", {
        "pass": ["2 passed, 0 failed"],
        "fail": ["1 passed, 1 failed", "adds two numbers", "test/sums.test.js:6"],
        "broken": ["0 passed, 1 failed"],
    }),
    "cmake": (cmake_project, "cmake", {
        "pass": ["build succeeded", "1 passed, 0 failed of 1"],
        "fail": ["build succeeded", "0 passed, 1 failed of 1", "test_sums"],
        "broken": ["build failed", "src/sums.c:2"],
    }),
    "rust": (rust_project, "cargo", {
        "pass": ["cargo test: 2 passed, 0 failed"],
        "fail": ["cargo test: 1 passed, 1 failed", "tests::adds", "src/lib.rs:10"],
        "broken": ["compile error E0277 at src/lib.rs:2"],
    }),
    "go": (go_project, "go", {
        "pass": ["go test: 1 package(s) ok, 0 failed"],
        "fail": ["failing tests: TestAdd", "sums_test.go:7"],
        "broken": ["compile error at sums.go:4"],
    }),
}  # fmt: skip


@pytest.mark.parametrize("variant", ["pass", "fail", "broken"])
@pytest.mark.parametrize("language", list(CASES))
def test_expert_states_the_true_facts(language, variant, tmp_path):
    maker, tool, facts = CASES[language]
    if shutil.which(tool) is None:
        pytest.skip(f"{tool} is not installed on this machine")
    project = maker(tmp_path / "repo", variant)
    with make_sandbox(default_backend(), project) as box:
        traj = ExecutionSubagent(make_policy("scripted"), box).run(QUERY)
    assert traj.termination == "final_answer", traj.error
    answer = "\n".join(entry["summary"] for entry in traj.final_answer)
    for fact in facts[variant]:
        assert fact in answer, f"{fact!r} missing from:\n{answer}"
    assert len(traj.final_answer) == len(traj.turns)  # one pair per command run


def test_expert_finds_a_nested_project(tmp_path):
    python_project(tmp_path / "repo" / "services" / "ledger", "fail")
    with make_sandbox("local", tmp_path / "repo") as box:
        traj = ExecutionSubagent(make_policy("scripted"), box).run("run the tests")
    assert "cd services/ledger" in traj.turns[-1].command
    assert "2 failed, 1 passed" in traj.final_answer[-1]["summary"]


def test_build_only_query_runs_no_tests(tmp_path):
    with make_sandbox("local", cmake_project(tmp_path / "repo", "pass")) as box:
        traj = ExecutionSubagent(make_policy("scripted"), box).run("Only build the project, do not run tests.")
    assert not any("ctest" in t.command for t in traj.turns)
    assert "build succeeded" in traj.final_answer[-1]["summary"]
