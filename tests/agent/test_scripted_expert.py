"""The scripted expert through the real loop and sandbox, on generated projects in five languages: its answers
state the recorded facts (checked by the fact checker), which also checks the generators' facts against real
build and test output."""

from __future__ import annotations

import json
import shutil

import pytest

from terminus.agent.loop import AgentConfig, ExecutionSubagent
from terminus.judge.facts import check, observations_of
from terminus.models import make_policy
from terminus.sandbox import SandboxSpec, default_backend, make_sandbox
from terminus.tasks.synthetic import SUPPORTED, TASK_TYPES, generate

TEN = AgentConfig(max_turns=10)  # the paper's turn limit

QUERY = "Build the project, run the unit tests and tell me what fails and why."
TOOLS = {"python": "python3", "node": "node", "cmake": "cmake", "rust": "cargo", "go": "go"}
CASES = [(lang, variant) for lang, variants in SUPPORTED.items() for variant in variants]


@pytest.mark.parametrize(("language", "variant"), CASES, ids=[f"{lang}-{v}" for lang, v in CASES])
def test_expert_states_the_true_facts(language, variant, tmp_path):
    if shutil.which(TOOLS[language]) is None:
        pytest.skip(f"{TOOLS[language]} is not installed on this machine")
    # index 1, seed 3: with these options the layouts vary (subfolders, two suites, verbose logs)
    project = generate(language, "inventory", variant, index=1, seed=3, subfolder_p=0.5, verbose_p=0.7)
    with make_sandbox(SandboxSpec(default_backend()), project.write(tmp_path / "repo")) as box:
        traj = ExecutionSubagent(make_policy("scripted"), box, TEN).run(QUERY)
    assert traj.termination == "final_answer", traj.error
    assert len(traj.final_answer) == len(traj.turns)  # one pair per command run
    # the toolchain line keeps the run's own exit status (a filtered run's was once reported as 0)
    assert all(
        t.exit_code is not None and f"exit code {t.exit_code}." in e["summary"]
        for t, e in zip(traj.turns[1:], traj.final_answer[1:], strict=True)
    )
    if variant == "fail":
        assert traj.turns[-1].exit_code != 0
    for task_type in TASK_TYPES[variant]:
        verdict = check(traj.final_answer, project.facts, task_type, observations_of(traj.messages))
        summary = "\n".join(e["summary"] for e in traj.final_answer)
        assert verdict.recall == 1.0, f"{task_type}: missing {verdict.missing}\n{summary}\nfacts: {project.facts}"
        assert verdict.precision == 1.0, f"{task_type}: wrong {verdict.wrong}\n{summary}"
        assert not verdict.hallucinated, f"{task_type}: not in any output: {verdict.hallucinated}\n{summary}"


def test_expert_finds_a_nested_project(tmp_path):
    project = generate("python", "billing", "fail", index=0, seed=0, subfolder_p=1.0)
    assert project.spec.subfolder
    with make_sandbox(SandboxSpec("local"), project.write(tmp_path / "repo")) as box:
        traj = ExecutionSubagent(make_policy("scripted"), box, TEN).run("run the tests")
    assert f"cd {project.spec.subfolder}" in traj.turns[-1].command
    failed = project.facts["tests"]["failed"]
    assert f"{failed} failed" in traj.final_answer[-1]["summary"]


def test_build_only_query_runs_no_tests(tmp_path):
    if shutil.which("cmake") is None:
        pytest.skip("cmake is not installed on this machine")
    project = generate("cmake", "payroll", "pass")
    with make_sandbox(SandboxSpec("local"), project.write(tmp_path / "repo")) as box:
        traj = ExecutionSubagent(make_policy("scripted"), box, TEN).run("Only build the project, do not run tests.")
    assert not any("ctest" in t.command for t in traj.turns)
    assert "build succeeded" in traj.final_answer[-1]["summary"]


# -- what the query names (issue: the expert ran `python3 -m pytest -q` at the root whatever the query asked) -------

PYPROJECT = {
    # many projects set a short traceback style: the cause must survive it
    "pyproject.toml": "[project]\nname = 'calc'\nversion = '0'\n",
    "setup.cfg": "[tool:pytest]\naddopts = --tb=short\n",
    "src/calc.py": "def add(a, b):\n    return a - b\n",
    "tests/test_calc.py": (
        "import sys\nsys.path.insert(0, 'src')\nfrom calc import add\n\n"
        "def test_zero():\n    assert add(0, 0) == 0\n\n"
        "def test_add():\n    assert add(2, 2) == 4\n"
    ),
    "tests/test_words.py": (
        "import pytest\n\n"
        "@pytest.mark.parametrize('text', ['use spaces', 'plain'])\n"
        "def test_split(text):\n    assert len(text.split()) == 1, f'{text!r} has spaces'\n"
    ),
    "tests/test_many.py": (
        "import pytest\n\n@pytest.mark.parametrize('n', range(17))\ndef test_n(n):\n    assert n < 0\n"
    ),
}


def _ask(tmp_path, query: str, files: dict | None = None):
    from builders import write_files

    repo = tmp_path / "repo"
    if not repo.exists():
        write_files(repo, files or PYPROJECT)
    with make_sandbox(SandboxSpec("local"), repo) as box:
        traj = ExecutionSubagent(make_policy("scripted"), box, TEN).run(query)
    assert traj.termination == "final_answer", traj.error
    ran = [t.command for t in traj.turns]
    return ran, "\n".join(e["summary"] for e in traj.final_answer), traj


def test_expert_runs_the_test_file_the_query_names(tmp_path):
    ran, answer, _ = _ask(tmp_path, "Run tests/test_calc.py and tell me what fails and why.")
    assert ran[-1].startswith("python3 -m pytest -q tests/test_calc.py 2>&1")
    assert "pytest: 1 failed, 1 passed" in answer
    # --tb=short prints `path:line: in test_add` and `E   assert 0 == 4`: the cause and its place are still stated
    assert "test_add: AssertionError at tests/test_calc.py:9" in answer and "assert 0 == 4" in answer


def test_expert_runs_a_test_id_with_spaces_whole(tmp_path):
    ran, answer, _ = _ask(tmp_path, "Run tests/test_words.py::test_split[use spaces] and report.")
    assert "'tests/test_words.py::test_split[use spaces]'" in ran[-1]
    assert "failing: tests/test_words.py::test_split[use spaces]" in answer
    assert "1 failed" in answer and "passed" not in answer.split("failing")[0].split("pytest:")[1]


def test_expert_runs_the_command_the_query_names_with_its_variables(tmp_path):
    ran, answer, _ = _ask(tmp_path, "Run `PYTHONPATH=src python3 -m pytest -q -x tests/test_calc.py` and explain it.")
    assert ran[-1].startswith("PYTHONPATH=src python3 -m pytest -q -x tests/test_calc.py 2>&1")
    assert "1 failed" in answer


def test_expert_names_the_interpreter_and_every_failure_when_the_query_names_nothing(tmp_path):
    ran, answer, traj = _ask(tmp_path, "Run the unit tests and tell me what fails and why.")
    assert ran[-1].startswith("python3 -m pytest -q 2>&1")
    assert traj.final_answer[-1]["command"] == "python3 -m pytest -q 2>&1"  # the toolchain line is not named
    python = shutil.which("python3")
    assert f"ran with {python} (Python " in answer
    # 19 failures: 10 named, and the rest counted from pytest's own total, not silently dropped
    assert "(+9 more)" in answer and "pytest: 19 failed, 2 passed" in answer


@pytest.mark.parametrize("style", ["long", "short", "line", "no"])
def test_expert_states_each_cause_in_every_traceback_style(tmp_path, style):
    query = f"Run `python3 -m pytest -q --tb={style} tests/test_calc.py tests/test_words.py` and tell me why it fails."
    _, answer, _ = _ask(tmp_path, query)
    assert "2 failed" in answer
    assert "test_add: AssertionError" in answer and "assert 0 == 4" in answer
    assert "test_split[use spaces]" in answer and "'use spaces' has spaces" in answer
    if style != "no":  # --tb=no prints no location at all; the summary lines still carry each message
        assert "tests/test_calc.py:9" in answer


@pytest.mark.parametrize("language", ["python", "node", "cmake", "rust", "go"])
def test_the_corpus_queries_that_name_the_usual_command_run_the_expert_recipe(language):
    """A query naming the toolchain's usual run (`cargo test --offline`) is answered by the recipe that refines it
    (one test thread, so the order is fixed; filtered output), in the project's folder: the corpus's teacher runs
    stay what they were."""
    from terminus.models.scripted import plan
    from terminus.tasks.queries import COMMANDS

    for step in ("test", "build"):
        named = COMMANDS[language][step]
        if " on the " in named:  # "node --check on the sources": prose, not a command
            continue
        asked = plan(language, "sub", f"Run `{named}` and summarise the results.")
        usual = plan(language, "sub", "Build the project and run the tests." if step == "build" else "Run the tests.")
        assert asked[0][0].startswith("cd sub && ")
        assert {c for c, _ in asked} <= {c for c, _ in usual}, (named, asked, usual)


def test_query_reading_doctests():
    import doctest

    from terminus.models import asked, project

    assert doctest.testmod(asked).failed == 0
    assert doctest.testmod(project).failed == 0


def test_a_swe_corpus_query_runs_its_scoped_test_command():
    """`swe tasks` writes the instance's scoped test command into the query; the expert runs exactly that (the whole
    suite at the root hit the time limit on pydicom and saw 911 tests where the task expects 76)."""
    from terminus.models.scripted import plan

    query = (
        "CI is red on this branch. Run the unit tests and tell me what fails and why. "
        "The tests to run: `python -m pytest -rA -p no:cacheprovider tests/test_money.py`."
    )
    (command, _), *rest = plan("python", ".", query)
    assert command.startswith("python -m pytest -rA -p no:cacheprovider tests/test_money.py 2>&1; rc=$?")
    assert not rest


# -- what the project declares and the tests the query names (issue 44) -------------------------------------------


@pytest.mark.parametrize(
    ("script", "lock", "query", "expected"),
    [
        ("jest", "package-lock.json", "why does 'adds numbers' fail?", "npm test -- -t 'adds numbers'"),
        ("vitest run", "pnpm-lock.yaml", "Run src/math.test.ts", "pnpm test src/math.test.ts"),
        ("mocha test/", "yarn.lock", "Why does test_parse fail?", "yarn test --grep test_parse"),
        ("node --test", "", "Why does test_parse fail?", "npm test -- --test-name-pattern test_parse"),
        ("uvu -r esm test", "", "Run the tests", "npm test"),
    ],
)
def test_node_runs_the_declared_script_by_its_package_manager_with_the_runners_filter(script, lock, query, expected):
    from terminus.models.project import Declared
    from terminus.models.scripted import plan, shown

    listing = "./package.json\n" + (f"./{lock}\n" if lock else "")
    declared = Declared(listing, ".", json.dumps({"scripts": {"test": script}}))
    (command, _), *_ = plan("node", ".", query, declared)
    assert shown(command) == f"{expected}  (full log kept in the sandbox, filtered)"


@pytest.mark.parametrize(
    ("kind", "query", "expected"),
    [
        ("go", "why does TestVersion6 fail?", "go test -v -run '^TestVersion6$' ./..."),
        ("go", "Run TestParse/empty_input only", "go test -v -run '^TestParse$/^empty_input$' ./..."),
        ("rust", "why does test_roundtrip fail?", "cargo test --offline --no-fail-fast test_roundtrip"),
        ("cmake", "why does test_misc fail?", "ctest --test-dir build -R test_misc"),
        ("python", "why does test_parse_empty fail?", "python3 -m pytest -q -k test_parse_empty"),
    ],
)
def test_a_named_test_is_scoped_in_every_language(kind, query, expected):
    from terminus.models.scripted import plan

    assert any(command.startswith(expected) for command, _ in plan(kind, ".", query)), plan(kind, ".", query)


def test_a_src_layout_runs_with_pythonpath_from_where_the_command_runs():
    from terminus.models.project import Declared
    from terminus.models.scripted import plan

    declared = Declared("./app/pyproject.toml\n./app/src/calc/__init__.py\n", "app")
    assert plan("python", "app", "Run the tests", declared)[0][0].startswith("cd app && PYTHONPATH=src python3 -m")
    scoped = plan("python", "app", "Run app/tests/test_calc.py", declared)[0][0]
    assert scoped.startswith("PYTHONPATH=app/src python3 -m pytest -q app/tests/test_calc.py")
