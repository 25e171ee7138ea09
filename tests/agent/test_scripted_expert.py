"""The scripted expert through the real loop and sandbox, on generated projects in five languages: its answers
state the recorded facts (checked by the fact checker), which also checks the generators' facts against real
build and test output."""

from __future__ import annotations

import shutil

import pytest

from terminus.agent.loop import ExecutionSubagent
from terminus.judge.facts import check, observations_of
from terminus.models import make_policy
from terminus.sandbox import default_backend, make_sandbox
from terminus.tasks.synthetic import SUPPORTED, TASK_TYPES, generate

QUERY = "Build the project, run the unit tests and tell me what fails and why."
TOOLS = {"python": "python3", "node": "node", "cmake": "cmake", "rust": "cargo", "go": "go"}
CASES = [(lang, variant) for lang, variants in SUPPORTED.items() for variant in variants]


@pytest.mark.parametrize(("language", "variant"), CASES, ids=[f"{lang}-{v}" for lang, v in CASES])
def test_expert_states_the_true_facts(language, variant, tmp_path):
    if shutil.which(TOOLS[language]) is None:
        pytest.skip(f"{TOOLS[language]} is not installed on this machine")
    # index 1, seed 3: with these options the layouts vary (subfolders, two suites, verbose logs)
    project = generate(language, "inventory", variant, index=1, seed=3, subfolder_p=0.5, verbose_p=0.7)
    with make_sandbox(default_backend(), project.write(tmp_path / "repo")) as box:
        traj = ExecutionSubagent(make_policy("scripted"), box).run(QUERY)
    assert traj.termination == "final_answer", traj.error
    assert len(traj.final_answer) == len(traj.turns)  # one pair per command run
    for task_type in TASK_TYPES[variant]:
        verdict = check(traj.final_answer, project.facts, task_type, observations_of(traj.messages))
        summary = "\n".join(e["summary"] for e in traj.final_answer)
        assert verdict.recall == 1.0, f"{task_type}: missing {verdict.missing}\n{summary}\nfacts: {project.facts}"
        assert verdict.precision == 1.0, f"{task_type}: wrong {verdict.wrong}\n{summary}"
        assert not verdict.hallucinated, f"{task_type}: not in any output: {verdict.hallucinated}\n{summary}"


def test_expert_finds_a_nested_project(tmp_path):
    project = generate("python", "billing", "fail", index=0, seed=0, subfolder_p=1.0)
    assert project.spec.subfolder
    with make_sandbox("local", project.write(tmp_path / "repo")) as box:
        traj = ExecutionSubagent(make_policy("scripted"), box).run("run the tests")
    assert f"cd {project.spec.subfolder}" in traj.turns[-1].command
    failed = project.facts["tests"]["failed"]
    assert f"{failed} failed" in traj.final_answer[-1]["summary"]


def test_build_only_query_runs_no_tests(tmp_path):
    if shutil.which("cmake") is None:
        pytest.skip("cmake is not installed on this machine")
    project = generate("cmake", "payroll", "pass")
    with make_sandbox("local", project.write(tmp_path / "repo")) as box:
        traj = ExecutionSubagent(make_policy("scripted"), box).run("Only build the project, do not run tests.")
    assert not any("ctest" in t.command for t in traj.turns)
    assert "build succeeded" in traj.final_answer[-1]["summary"]
