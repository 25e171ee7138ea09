"""Terminal-Bench 2.0 (`terminal-bench-2`) on three real tasks (tests/fixtures/terminal-bench-2, upstream files
unchanged): the task folders become instances; Harbor's rule (reward == 1, no verifier error) judges the reward
files the tasks' own test scripts write; the verifier runs end to end in the local and bwrap sandboxes, and in
docker where the private engine starts, failing without the reference solution and passing with it."""

from __future__ import annotations

import copy
import dataclasses
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from terminus.eval.swe_cells import harbor_limits, swe_instances
from terminus.sandbox import make_sandbox
from terminus.sandbox.bwrap import bwrap_path
from terminus.sandbox.spec import SandboxSpec
from terminus.swe.benchmarks import load_benchmark_config, load_instances
from terminus.swe.families import DatasetError
from terminus.swe.harbor import HarborTask, image_workdir, load_harbor_tasks, load_task
from terminus.swe.harbor_grade import VerifierPaths, grade_in_sandbox, judge, parse_rewards, passes, start_env

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "terminal-bench-2"
TASKS = ("cancel-async-tasks", "fix-git", "regex-log")


def test_task_folders_become_instances():
    tasks = load_instances("terminal-bench-2", dataset=str(FIXTURES))
    assert [t.instance_id for t in tasks] == list(TASKS)  # sorted folder names; LICENSE and README are no tasks
    by_id = {t.instance_id: t for t in tasks}
    for task in tasks:
        folder = FIXTURES / task.instance_id
        assert isinstance(task, HarborTask) and task.family == "harbor"
        assert task.problem_statement == task.instruction == (folder / "instruction.md").read_text()
        assert task.image == f"alexgshaw/{task.instance_id}:20251031"
        assert task.verifier_timeout_s == 900.0 and task.agent_timeout_s == 900.0
        assert task.network and task.tests_dir == folder.resolve() / "tests"
    # the working folder is the image's: the Dockerfile's last WORKDIR
    assert by_id["fix-git"].workdir == "/app/personal-site" and by_id["regex-log"].workdir == "/app"
    assert by_id["fix-git"].meta["difficulty"] == "easy"
    assert by_id["regex-log"].meta["category"] == "data-processing"
    assert by_id["cancel-async-tasks"].meta["tags"] == ["async", "concurrency", "python"]
    assert by_id["regex-log"].instruction.startswith("Write a regex expression that matches dates")
    # a subset by id or count, as for the SWE benchmarks
    assert [t.instance_id for t in load_instances("terminal-bench-2", dataset=str(FIXTURES), ids=["fix-git"])] == [
        "fix-git"
    ]
    assert len(load_instances("terminal-bench-2", dataset=str(FIXTURES), limit=2)) == 2


def test_the_benchmark_config_and_the_grid_read_the_task_folder(tmp_path):
    cfg = load_benchmark_config("terminal-bench-2")
    assert cfg["family"] == "harbor" and cfg["tasks"] == 89 and re.fullmatch(r"[0-9a-f]{40}", cfg["commit"])
    eval_cfg = {"swe": {"datasets": {"terminal-bench-2": str(FIXTURES)}, "limit": None}, "max_tasks": 2}
    assert [t.instance_id for t in swe_instances(eval_cfg, "terminal-bench-2")] == ["cancel-async-tasks", "fix-git"]
    # a folder not fetched yet: the error says how to fetch the pinned commit
    missing = tmp_path / "tb2"
    with pytest.raises(
        DatasetError, match=rf"{missing} is not a folder; fetch it with: git clone .*checkout {cfg['commit']}"
    ):
        load_instances({**cfg, "dataset": str(missing)})
    (missing / "notes").mkdir(parents=True)
    with pytest.raises(DatasetError, match="no task folders"):
        load_harbor_tasks(missing, cfg)


def test_harbor_tasks_are_not_graded_as_patches(tmp_path):
    from typer.testing import CliRunner

    from terminus.cli import app

    predictions = tmp_path / "p.jsonl"
    predictions.write_text('{"instance_id": "regex-log", "model_patch": ""}\n')
    args = ["swe", "grade", "--benchmark", "terminal-bench-2", "--dataset", str(FIXTURES)]
    args += ["--predictions", str(predictions), "--sandbox", "docker", "--out", str(tmp_path / "out.json")]
    done = CliRunner().invoke(app, args)
    assert done.exit_code != 0 and "graded in eval cells, not by patches" in done.output


def test_broken_task_folders_are_named(tmp_path):
    def copy() -> Path:
        folder = tmp_path / f"t{len(list(tmp_path.iterdir()))}" / "regex-log"
        shutil.copytree(FIXTURES / "regex-log", folder)
        return folder

    folder = copy()
    (folder / "tests" / "test.sh").unlink()
    with pytest.raises(DatasetError, match=r"regex-log: no tests/test\.sh"):
        load_task(folder)
    folder = copy()
    (folder / "task.toml").write_text("[environment\n")
    with pytest.raises(DatasetError, match=r"task\.toml: not valid TOML"):
        load_task(folder)
    folder = copy()
    toml = (folder / "task.toml").read_text()
    (folder / "task.toml").write_text(toml.replace('docker_image = "alexgshaw/regex-log:20251031"\n', ""))
    with pytest.raises(DatasetError, match=r"no \[environment\]\.docker_image"):
        load_task(folder)
    folder = copy()
    (folder / "task.toml").write_text(toml + '\n[verifier.env]\nKEY = "${HOST_KEY}"\n')
    with pytest.raises(DatasetError, match="takes values from the host"):
        load_task(folder)


def test_the_working_folder_is_the_dockerfiles_last_workdir(tmp_path):
    dockerfile = tmp_path / "Dockerfile"
    dockerfile.write_text("FROM x\nWORKDIR /app\nRUN true\nworkdir sub/dir\n")
    assert image_workdir(dockerfile) == "/app/sub/dir"
    assert image_workdir(tmp_path / "none") is None
    folder = tmp_path / "task"
    shutil.copytree(FIXTURES / "regex-log", folder)
    (folder / "environment" / "Dockerfile").unlink()
    assert load_task(folder, default_workdir="/srv").workdir == "/srv"  # no Dockerfile: the config's default
    (folder / "task.toml").write_text((folder / "task.toml").read_text() + "\n[environment.more]\n")
    text = (folder / "task.toml").read_text().replace("[environment]\n", '[environment]\nworkdir = "/work"\n', 1)
    (folder / "task.toml").write_text(text)
    assert load_task(folder).workdir == "/work"  # task.toml's own workdir wins, as in Harbor


def _reward_tail(task: str) -> str:
    """The lines of the task's own test.sh that turn pytest's exit status into the reward file."""
    script = (FIXTURES / task / "tests" / "test.sh").read_text()
    tail = script[script.index("if [ $? -eq 0 ]; then") :]
    assert "echo 1 > /logs/verifier/reward.txt" in tail and "echo 0 > /logs/verifier/reward.txt" in tail
    return tail


@pytest.mark.parametrize("task", TASKS)
def test_the_rule_on_the_rewards_the_tasks_test_scripts_write(task, tmp_path):
    def reward_file(status: str) -> bytes:
        logs = tmp_path / status / "logs" / "verifier"
        logs.mkdir(parents=True)
        tail = _reward_tail(task).replace("/logs/verifier", str(logs))
        subprocess.run(["bash", "-c", f"{status}\n{tail}"], check=True, timeout=30)
        return (logs / "reward.txt").read_bytes()

    passed, failed = reward_file("true"), reward_file("false")  # pytest's exit status: 0, or not
    assert (passed, failed) == (b"1\n", b"0\n")
    grade = judge(task, passed, None)
    assert grade.resolved and grade.reward == 1.0 and grade.error is None
    grade = judge(task, failed, None)
    assert not grade.resolved and grade.reward == 0.0 and grade.error is None


def test_the_rule_on_missing_empty_and_unreadable_rewards():
    missing = judge("t", None, None)
    assert not missing.resolved and missing.reward is None and "wrote no reward" in missing.error
    empty = judge("t", b"", None)
    assert not empty.resolved and "reward.txt is empty" in empty.error
    for text in (b"passed\n", b"1/1\n", b"\xff\xfe"):
        grade = judge("t", text, None)
        assert not grade.resolved and grade.reward is None and "reward.txt is not a number" in grade.error
    # Harbor reads the text as one float: whitespace around it and a float's spellings are numbers
    assert parse_rewards(b" 1.0 \n", None) == {"reward": 1.0} and judge("t", b"1e0", None).resolved
    # only exactly 1 passes: a partial reward is not a pass
    assert not judge("t", b"0.99\n", None).resolved and not judge("t", b"2\n", None).resolved


def test_reward_json_comes_first_and_its_reward_key_decides():
    assert judge("t", b"0\n", b'{"reward": 1}').resolved  # reward.json wins over reward.txt
    assert not judge("t", b"1\n", b'{"reward": 0.5}').resolved
    assert judge("t", None, b'{"accuracy": 1.0, "f1": 0.2}').resolved  # no `reward`: the first value
    assert judge("t", None, b'{"reward": true}').reward == 1.0  # a bool is 1 or 0
    assert judge("t", None, b'{"reward": "1"}').reward is None  # a string is no reward
    assert "not JSON" in judge("t", b"1\n", b"{reward: 1}").error
    assert "not an object" in judge("t", None, b"[1]").error
    assert "reward.json is empty" in judge("t", b"1\n", b"").error
    assert passes({"reward": 1}) and not passes({"reward": 1}, error="verifier: timed out")


def _offline(text: str, ws: str) -> str:
    """The regex-log files for a sandbox without the task's image or the network: the container's paths (/app,
    /tests, /logs/verifier) moved under the sandbox's workspace, and test.sh's two network steps (apt-get curl,
    then curl the uv installer) and its uvx (which fetches Python 3.13 and pytest) replaced by this Python's
    pytest. The PWD check and the reward lines stay as they are."""
    network = (
        "# Install curl\napt-get update\napt-get install -y curl\n\n# Install uv\n"
        "curl -LsSf https://astral.sh/uv/0.9.5/install.sh | sh\n\nsource $HOME/.local/bin/env\n"
    )
    uvx = (
        "uvx \\\n  -p 3.13 \\\n  -w pytest==8.4.1 \\\n  -w pytest-json-ctrf==0.3.5 \\\n"
        "  pytest --ctrf /logs/verifier/ctrf.json"
    )
    if "uvx" in text:
        assert network in text and uvx in text, "the fixture's test.sh changed: update this test's rewriting"
        text = text.replace(network, "").replace(uvx, f"{sys.executable} -m pytest -p no:cacheprovider")
    for path in ("/logs/verifier", "/tests/", "/app/"):
        text = text.replace(path, f"{ws}{path}")
    return text


def _offline_task(tmp_path: Path, ws: str) -> tuple[HarborTask, str]:
    copy = tmp_path / "regex-log"
    shutil.copytree(FIXTURES / "regex-log", copy)
    for name in ("tests/test.sh", "tests/test_outputs.py", "solution/solve.sh"):
        (copy / name).write_text(_offline((copy / name).read_text(), ws))
    task = dataclasses.replace(load_task(copy), workdir=f"{ws}/app")
    return task, (copy / "solution" / "solve.sh").read_text()


def _solution_fails_then_passes(box, task: HarborTask, solve: str, paths: VerifierPaths):
    made = box.run(f"mkdir -p {task.workdir}", 30)  # the image's WORKDIR
    assert made.exit_code == 0, made.output
    before = grade_in_sandbox(box, task, paths)
    assert not before.resolved and before.reward == 0.0 and before.error is None, (before.error, before.log)
    assert "Regex file" in before.log and "does not exist" in before.log  # pytest ran the task's test and it failed
    box.write_file("solve.sh", solve)
    solved = box.run(f"cd {task.workdir} && bash {box.inside_workspace}/solve.sh", 60)
    assert solved.exit_code == 0, solved.output
    after = grade_in_sandbox(box, task, paths)
    assert after.resolved and after.reward == 1.0 and after.error is None, (after.error, after.log)
    assert "1 passed" in after.log
    return after


@pytest.mark.skipif(
    not os.environ.get("TERMINUS_TB2_ONLINE"),
    reason="the official test.sh of every Terminal-Bench 2.0 task installs curl with apt-get and uv from "
    "astral.sh, and uvx fetches Python 3.13 and pytest, so it needs the network and the task's image "
    "(alexgshaw/<task>): no offline sandbox runs it unchanged (the tests around this one run it with those steps "
    "replaced by this Python's pytest). Set TERMINUS_TB2_ONLINE=1 on a machine whose Docker engine has the network",
)
def test_the_official_test_script_unchanged_in_the_tasks_image():
    task = load_task(FIXTURES / "regex-log")
    spec = SandboxSpec("docker").for_task(task.image)
    with make_sandbox(spec, None, harbor_limits(task), network=True) as box:
        before = grade_in_sandbox(box, task)
        assert not before.resolved and before.reward == 0.0 and before.error is None, (before.error, before.log)
        box.write_file("solve.sh", (FIXTURES / "regex-log" / "solution" / "solve.sh").read_text())
        assert box.run(f"cd {task.workdir} && bash {box.inside_workspace}/solve.sh", 60).exit_code == 0
        after = grade_in_sandbox(box, task)
        assert after.resolved and after.reward == 1.0, (after.error, after.log)


def own_python_binds(backend: str) -> tuple[str, ...]:
    """This interpreter's environment where bwrap's private /tmp and /home would hide it (a checkout and its .venv
    under /tmp, as CI clones may be): the offline test.sh runs this Python's pytest."""
    if backend != "bwrap":
        return ()
    prefixes = [sys.prefix, str(Path(os.path.realpath(sys.executable)).parent.parent)]
    return tuple(p for p in dict.fromkeys(prefixes) if p.startswith(("/tmp/", "/home/")))


@pytest.mark.parametrize(
    "backend",
    ["local", pytest.param("bwrap", marks=pytest.mark.skipif(bwrap_path() is None, reason="bwrap missing"))],
)
def test_the_verifier_end_to_end_in_a_local_sandbox(backend, tmp_path):
    with make_sandbox(SandboxSpec(backend, binds=own_python_binds(backend)), None) as box:
        env = start_env(box)
        ws = box.inside_workspace
        task, solve = _offline_task(tmp_path, ws)
        paths = VerifierPaths(tests=f"{ws}/tests", logs=f"{ws}/logs/verifier")
        _solution_fails_then_passes(box, task, solve, paths)
        # the agent's exports reach its later commands, never the verifier run with the start environment: here
        # one that would make pytest only collect the tests, and pass without running them
        unsolved = box.run(f"rm -f {task.workdir}/regex.txt && export PYTEST_ADDOPTS=--collect-only", 30)
        assert unsolved.exit_code == 0, unsolved.output
        assert grade_in_sandbox(box, task, paths).resolved  # the export leaks without the reset ...
        fresh = grade_in_sandbox(box, task, paths, env=env)
        assert not fresh.resolved and fresh.reward == 0.0, fresh.log  # ... and not with it
        # what the agent left in the verifier's folders is never read: they are emptied before the test runs (a
        # reward.json would win over the reward.txt that test.sh writes)
        plant = f"mkdir -p {paths.logs} && echo '{{\"reward\": 1}}' > {paths.logs}/reward.json"
        planted = box.run(f"{plant} && rm -f {task.workdir}/regex.txt", 30)
        assert planted.exit_code == 0, planted.output
        assert grade_in_sandbox(box, task, paths, env=env).reward == 0.0
        # a verifier that cannot start writes no reward: not resolved, and the record says why
        lost = grade_in_sandbox(box, dataclasses.replace(task, workdir=f"{ws}/nowhere"), paths, env=env)
        assert not lost.resolved and lost.reward is None and "wrote no reward" in lost.error
        # a verifier slower than its timeout fails the trial, whatever it would have written (Harbor's
        # VerifierTimeoutError)
        slow_script = task.tests_dir / "test.sh"
        slow_script.write_text(slow_script.read_text().replace("\n", "\nsleep 30\n", 1))
        slow = grade_in_sandbox(box, task, paths, timeout_s=2, env=env)
        assert not slow.resolved and slow.timed_out and "timed out after 2 s" in slow.error


@pytest.mark.docker
def test_the_verifier_in_a_container_at_harbors_paths(docker_engine, tmp_path):
    """In a container the paths are Harbor's own (/tests, /logs/verifier, /app): only test.sh's network steps are
    replaced, the test file and the solution run unchanged. The Python with pytest is bound in from the host."""
    from terminus.sandbox.docker import HOST_BINDS

    binds = (*HOST_BINDS, f"{sys.base_prefix}:{sys.base_prefix}:ro", f"{sys.prefix}:{sys.prefix}:ro")
    spec = SandboxSpec("docker", binds=binds, docker_url=docker_engine)
    with make_sandbox(spec, None) as box:
        task, solve = _offline_task(tmp_path, "")
        task = dataclasses.replace(task, workdir="/app")
        _solution_fails_then_passes(box, task, solve, VerifierPaths())


@pytest.mark.docker
def test_a_grid_cell_grades_the_final_state_with_the_official_script(docker_engine, tmp_path):
    """A terminal-bench-2 cell through `run_cell`: the reader main agent works on the instruction in a container,
    then the task's test.sh runs there unchanged. Offline its apt-get and uv install fail and its pytest never
    starts, so the script itself writes reward 0: a real failing reward, recorded as not resolved, with no error.
    The task runs in the registry-free host image (no network, no /app there), named by its own task.toml."""
    from terminus.config import refill
    from terminus.eval.grid import run_cell
    from terminus.judge.scorer import Scorer
    from terminus.runspec import RunSpec, load_run
    from terminus.sandbox.docker import HOST_IMAGE

    tasks = tmp_path / "tb2"
    shutil.copytree(FIXTURES / "regex-log", tasks / "regex-log")
    toml = tasks / "regex-log" / "task.toml"
    environment = f'[environment]\nworkdir = "/tmp"\nnetwork_mode = "no-network"\ndocker_image = "{HOST_IMAGE}"\n'
    toml.write_text(re.sub(r'\[environment\]\n(.*\n)*?docker_image = ".*"\n', environment, toml.read_text()))
    assert load_task(tasks / "regex-log").image == HOST_IMAGE and not load_task(tasks / "regex-log").network
    config = copy.deepcopy(load_run("configs/config.yaml").config)
    config["eval"] |= {
        "benchmarks": ["terminal-bench-2"],
        "concurrency": 1,
        "subagents": [{"name": "none", "policy": "none"}],
        "swe": {"datasets": {"terminal-bench-2": str(tasks)}, "limit": None, "timeout_s": 600},
    }
    run = RunSpec(refill(config), SandboxSpec("docker", docker_url=docker_engine))
    name = "reader__none__full__terminal-bench-2__0"
    (record,) = run_cell(
        run, tmp_path / "unused.jsonl", tmp_path / "eval", Scorer(tasks={}), name, show_progress=False
    )
    assert record["benchmark"] == "terminal-bench-2" and record["task_id"] == "regex-log"
    assert record["resolved"] == 0.0 and record["verifier_reward"] == 0.0 and record["error"] is None
    assert "/tests/test.sh" in record["verifier_log"] and "uvx: command not found" in record["verifier_log"]
    assert record["main_agent_turns"] >= 1 and record["source"] == "harbor"
    assert not (tmp_path / "eval" / "predictions").exists()  # no patch, no predictions file
