"""The reward cannot be gamed (issue 40): the scripted expert's real episodes on Python tests, CMake, Go and Rust
builds and error diagnoses keep >= 0.8 through `terminus judge --no-llm` in both scorer configs, while the answers a
policy games with (no command, facts copied without observing them, the wrong command, tool-call markup, an empty
summary, prose) fall to <= 0.1, and the correct answer padded with invented claims falls at least 0.2 below the
correct one."""

from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from builders import cli_args, synthetic_corpus, task
from terminus.cli import app
from terminus.collect.collect import collect
from terminus.config import ROOT
from terminus.io import read_jsonl, write_jsonl_atomic
from terminus.judge.facts import check
from terminus.judge.runs import names, observations_of
from terminus.judge.scorer import Scorer, ScorerConfig
from terminus.judge.validity import CORRUPTIONS, validity_report
from terminus.models import make_policy
from terminus.sandbox.spec import SandboxSpec
from terminus.tasks.record import load_tasks, write_tasks

from .answers import variants

CONFIGS = ("scorer.yaml", "scorer-learning.yaml")  # the paper's (with the form term) and the learning runs'
GAMING = ("no_command", "copied_facts", "wrong_command", "markup", "empty_summary", "prose")
TOOLS = {"python": "python3", "cmake": "cmake", "go": "go", "rust": "cargo"}


@pytest.fixture(scope="module")
def expert(tmp_path_factory) -> tuple[Path, list[dict]]:
    """The corpus's tasks (Python tests, CMake/Go/Rust builds, error diagnoses, and a clean build of each compiled
    project) and the scripted expert's episodes on them, through the real loop."""
    languages = [lang for lang, tool in TOOLS.items() if shutil.which(tool)]
    if len(languages) < 2 or "python" not in languages:
        pytest.skip(f"needs python3 and at least one of cmake, go, cargo (found: {languages})")
    root = tmp_path_factory.mktemp("grounded")
    synthetic = {"languages": languages, "repos_per_language": 1, "variants": ["pass", "fail", "broken", "warnings"]}
    tasks_file = synthetic_corpus(root, synthetic)
    tasks = load_tasks(tasks_file)
    query = "Only build the project, do not run tests. Report errors with file:line and the warning count."
    for passing in [t for t in tasks if t.variant == "pass" and (t.facts.get("build") or {}).get("success")]:
        if passing.language != "go":  # go prints no warning count, so a Go build task asks for a fact no run states
            build_id = passing.id.rsplit("-", 1)[0] + "-build"
            tasks.append(dataclasses.replace(passing, id=build_id, task_type="build/compile", query=query))
    for each in tasks:
        each.split = "train"
    write_tasks(tasks_file, tasks)
    out = root / "expert.jsonl"
    collect(tasks_file, make_policy("scripted"), out, splits=("train",), sandbox=SandboxSpec(), max_turns=10,
            concurrency=2, show_progress=False)  # fmt: skip
    records = [r for r in read_jsonl(out) if r["termination"] == "final_answer"]
    assert len(records) == len(tasks)
    return tasks_file, records


def judge_no_llm(tmp_path: Path, tasks_file: Path, trajectories: list[dict], scorer: str) -> dict[str, dict]:
    """`terminus judge --no-llm` under the scorer config named, on these trajectories: verdicts by trajectory id."""
    judge = {
        "scorer": str(ROOT / "configs" / "judge" / scorer),
        "rubric": str(ROOT / "configs" / "judge" / "rubric.yaml"),
        "prompts": str(ROOT / "configs" / "judge" / "prompts.yaml"),
    }
    config = tmp_path / f"config-{scorer}"
    config.write_text(yaml.safe_dump({"run": "grounded", "tasks": {}, "judge": judge}))
    given, out = tmp_path / "trajectories.jsonl", tmp_path / f"verdicts-{scorer}.jsonl"
    write_jsonl_atomic(given, trajectories)
    inputs = {"trajectories": given, "tasks": tasks_file, "out": out, "config": config, "no_llm": True}
    result = CliRunner().invoke(app, cli_args("judge", **inputs))
    assert result.exit_code == 0, result.output
    return {v["trajectory_id"]: v for v in read_jsonl(out)}


@pytest.mark.parametrize("scorer", CONFIGS)
def test_gaming_answers_earn_nothing_and_the_experts_keep_their_reward(expert, scorer, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    tasks_file, records = expert
    answers = {(r["task_id"], kind): v for r in records for kind, v in variants(r).items()}
    verdicts = judge_no_llm(tmp_path, tasks_file, list(answers.values()), scorer)
    reward = {key: verdicts[v["id"]]["reward"] for key, v in answers.items()}
    kinds = {t.task_type for t in load_tasks(tasks_file)}
    assert kinds == {"test-execution", "error-diagnosis", "build/compile"}
    failures = []
    for task_id in {r["task_id"] for r in records}:
        correct = reward[task_id, "correct"]
        if correct < 0.8:
            failures.append(f"{task_id}: correct {correct} < 0.8 ({verdicts[answers[task_id, 'correct']['id']]})")
        failures += [f"{task_id}: {k} {reward[task_id, k]} > 0.1" for k in GAMING if reward[task_id, k] > 0.1]
        if reward[task_id, "padded"] > correct - 0.2:
            failures.append(f"{task_id}: padded {reward[task_id, 'padded']} not 0.2 below correct {correct}")
    assert not failures, "\n".join(failures)


@pytest.mark.parametrize("scorer", CONFIGS)
def test_a_judge_that_rates_every_answer_perfect_pays_no_gaming_answer(expert, scorer):
    """The LLM judge's share is gated on grounded recall like precision: a judge persuaded by copied facts (every
    dimension at its best) adds nothing to an answer whose facts no command printed."""
    from terminus.judge.llm import JudgeResult

    tasks_file, records = expert
    tasks = {t.id: t for t in load_tasks(tasks_file)}
    config = dataclasses.replace(ScorerConfig.load(ROOT / "configs" / "judge" / scorer), judge=0.4)
    scoring = Scorer(tasks=tasks, config=config)
    perfect = JudgeResult(scores={"faithfulness": 1.0}, score=1.0)
    for record in records:
        answers = variants(record)
        assert scoring.verdict(answers["correct"], perfect)["reward"] >= 0.8
        for kind in GAMING:
            got = scoring.verdict(answers[kind], perfect)["reward"]
            assert got <= 0.1, f"{record['task_id']}: {kind} earns {got} from a perfect judge"


def _build_episode(command: str, output: str, summary: str) -> dict:
    arguments = json.dumps({"command": command})
    return {
        "id": f"b-{abs(hash((command, summary)))}",
        "task_id": "clean",
        "termination": "final_answer",
        "turns": [{"command": command, "exit_code": 0}],
        "messages": [
            {"role": "user", "content": "Build the project and tell me how many warnings there are."},
            {"role": "assistant", "content": "", "tool_calls": [{"function": {"name": "t", "arguments": arguments}}]},
            {"role": "tool", "content": output},
        ],
        "final_answer": [{"command": command, "summary": summary}],
    }


CLEAN = {"build": {"success": True, "warnings": 0, "errors": []}, "exit_code": 0}


def _clean_build_task():
    return task(id="clean", language="cmake", task_type="build/compile", query="Build it.", facts=CLEAN)


def _tests_task() -> dict:
    facts = {"tests": {"passed": 7, "failed": 0, "failing": []}}
    return {"clean": task(id="clean", task_type="test-execution", query="Run the tests.", facts=facts)}


@pytest.mark.parametrize("scorer", CONFIGS)
def test_the_issues_answers_on_a_clean_build(scorer):
    """The issue's figures: with no command, 'The build succeeded with 0 warnings.' got 0.833 / 0.750 and 'The build
    succeeded.' 0.667 / 0.600; an `ls` exiting 0 grounds no build; the real build, stated, earns the full reward."""
    config = ScorerConfig.load(ROOT / "configs" / "judge" / scorer)
    scorer = Scorer(tasks={"clean": _clean_build_task()}, config=config)
    at_once = {**_build_episode("cmake --build build", "", "The build succeeded with 0 warnings."), "turns": []}
    at_once["messages"] = at_once["messages"][:1]
    listed = _build_episode("ls", "CMakeLists.txt\nsrc\n[exit code 0]", "The build succeeded with 0 warnings.")
    built = "[100%] Built target app\nwarnings: 0\n[exit code 0]"
    trivial = _build_episode("cmake --build build", built, "The build succeeded.")
    real = _build_episode("cmake --build build", built, "The build succeeded with 0 warnings.")
    rewards = [v["reward"] for v in scorer.score([at_once, listed, trivial, real])]
    assert rewards[0] == 0.0 and rewards[1] <= 0.1 and rewards[3] == 1.0
    assert rewards[2] < rewards[3]  # a true outcome without the warning count is partial credit


def test_a_count_is_seen_only_where_the_output_states_it():
    """'[exit code 0]' once grounded '0 warnings' (two numbers on a line differing by 0); '5 failed' was grounded by
    any line holding 7 and 2."""
    facts = {"build": {"success": True, "warnings": 0}, "tests": {"passed": 2, "failed": 5, "failing": []}}
    answer = [{"command": "", "summary": "0 warnings; 5 failed."}]
    result = check(answer, facts, "build/compile", "batch 7 of 2 done\n[exit code 0]")
    assert set(result.hallucinated) == {"0 warnings", "5 failed"}
    result = check(answer, facts, "build/compile", "warnings: 0\n5 tests failed\n[exit code 1]")
    assert not result.hallucinated


def test_a_command_is_named_by_what_it_runs():
    """The expert's shortened names of its filtered runs, and a model's shorthand, name the run; another program
    does not."""
    filtered = (
        'cargo test --offline --no-fail-fast -- --test-threads=1 > "$TMPDIR/run.log" 2>&1; rc=$?; '
        'LOG="$TMPDIR/run.log"; grep -E \'^test result:\' "$LOG" | head -200 > "$TMPDIR/kept.log"; '
        'cat "$TMPDIR/kept.log"; exit $rc'
    )
    assert names(
        "cargo test --offline --no-fail-fast -- --test-threads=1  (full log kept in the sandbox, filtered)", filtered
    )
    assert names("cargo test", filtered) and not names("cargo build --offline", filtered)
    assert names("pytest -q", 'python3 -m pytest -q 2>&1; rc=$?; echo "[toolchain: x]"; exit $rc')
    assert names("cd build && make", "make -j4") and not names("make", "ls -R")
    assert names("pytest", "bash -lc 'python -m pytest -q'")


@pytest.mark.parametrize(
    ("summary", "why"),
    [
        (
            '7 passed.\n<tool_call>\n{"name": "run_in_terminal", "arguments": {"command": "ls"}}\n</tool_call>',
            "markup",
        ),
        ('7 passed. {"name": "run_in_terminal", "arguments": {"command": "ls"}}', "markup"),
        ("", "empty Summary"),
    ],
)
def test_markup_or_an_empty_summary_makes_an_answer_unusable(summary, why):
    episode = _build_episode("pytest", "7 passed in 0.1s\n[exit code 0]", summary)
    good = _build_episode("pytest", "7 passed in 0.1s\n[exit code 0]", "7 passed.")
    bad, fine = Scorer(tasks=_tests_task()).score([episode, good])
    assert bad["reward"] == 0.0 and why in bad["unusable"] and fine["reward"] == 1.0


def test_form_alone_never_lifts_an_answer_above_a_tenth(tmp_path):
    """However large format_weight is, an answer that states nothing grounded earns at most 0.1."""
    raw = yaml.safe_load((ROOT / "configs" / "judge" / "scorer.yaml").read_text()) | {"format_weight": 0.6}
    (tmp_path / "scorer.yaml").write_text(yaml.safe_dump(raw))
    scorer = Scorer(tasks={"clean": _clean_build_task()}, config=ScorerConfig.load(tmp_path / "scorer.yaml"))
    (verdict,) = scorer.score([_build_episode("ls", "src\n[exit code 0]", "Listed the files.")])
    assert verdict["form"] == 1.0 and verdict["reward"] == 0.1


def test_text_that_states_nothing_checkable_costs():
    """Padding the fact checker cannot see as a claim still lowers the reward, with or without a reference."""
    output = "7 passed in 0.1s\n[exit code 0]"
    plain = _build_episode("pytest", output, "pytest: 7 passed; exit code 0.")
    prose = (
        " Overall the run went through the usual stages of the toolchain, and it is worth noting that the output "
        "contained a number of informational lines which were reviewed carefully."
    )
    padded = _build_episode("pytest", output, "pytest: 7 passed; exit code 0." + prose)
    good, worse = Scorer(tasks=_tests_task()).score([plain, padded])
    assert good["unsupported"] == 0.0 and worse["unsupported"] > 0.5
    assert worse["reward"] < good["reward"] - 0.1


def test_the_expert_on_real_episodes_states_every_fact_grounded(expert):
    """The scripted expert's answers: every claim seen in the output of the command its pair names."""
    tasks_file, records = expert
    tasks = {t.id: t for t in load_tasks(tasks_file)}
    for record in records:
        truth = tasks[record["task_id"]]
        result = check(record["final_answer"], truth.facts, truth.task_type, observations_of(record["messages"]))
        assert result.recall == 1.0 and not result.hallucinated, (truth.id, result)


def test_judge_validity_reports_the_policys_failure_modes_by_name(expert, tmp_path, monkeypatch):
    """`terminus judge-validity` corrupts the expert's episodes the ways GRPO's policy failed too, each reported by
    name; the fact checker ranks the truth first on every one."""
    monkeypatch.chdir(tmp_path)
    tasks_file, records = expert
    given = tmp_path / "expert.jsonl"
    write_jsonl_atomic(given, records)
    judge_no_llm(tmp_path, tasks_file, records[:1], "scorer.yaml")  # writes the config
    out = tmp_path / "validity.json"
    inputs = {"trajectories": given, "tasks": tasks_file, "out": out, "config": tmp_path / "config-scorer.yaml"}
    result = CliRunner().invoke(app, cli_args("judge-validity", **inputs))
    assert result.exit_code == 0, result.output
    by_corruption = json.loads(out.read_text())["fact_checker"]["by_corruption"]
    new = {"no_command", "trivial_claim", "tool_call_markup", "ungrounded_facts", "wrong_command"}
    assert new <= set(by_corruption) and set(by_corruption) == set(CORRUPTIONS)
    assert all(share == 1.0 for share in by_corruption.values()), by_corruption


def test_the_validity_note_names_paths_relative_to_the_repository():
    """The committed validity.json named /work/main/results/smoke/models/base, a folder of the machine that made it."""
    note = f"The LLM judge here is {ROOT / 'results' / 'smoke' / 'models' / 'base'}, a tiny local model."
    report = validity_report([_build_episode("pytest", "7 passed\n[exit code 0]", "7 passed.")], _tests_task(), None,
                             note=note)  # fmt: skip
    assert report["note"] == "The LLM judge here is results/smoke/models/base, a tiny local model."
