"""The paper scale's paths on this machine: the config's sandbox reaches every stage, and docker runs ordinary
tasks (the paper config's backend) with the default image, whose prompt names the workspace as the command sees it."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from builders import TERMINUS, cli_args, synthetic_corpus
from terminus.collect.runner import run_episode
from terminus.config import load_config, load_yaml
from terminus.judge.facts import check, observations_of
from terminus.models import make_policy
from terminus.sandbox.spec import SandboxSpec
from terminus.tasks.record import load_tasks

ROOT = Path(__file__).resolve().parents[1]
SNAKEMAKE = [sys.executable, "-m", "snakemake"]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> Path:
    return synthetic_corpus(
        tmp_path_factory.mktemp("paper-scale"),
        {"languages": ["python"], "repos_per_language": 3, "variants": ["fail"]},
        {"train": 1.0, "val": 0.0, "test": 0.0},
        sandbox="local",
        collect={"concurrency": 1},
    )


def test_collect_runs_in_the_configs_sandbox_and_records_it(corpus, tmp_path):
    config = corpus.parent / "config.yaml"
    out = tmp_path / "trajectories.jsonl"
    done = subprocess.run(
        [TERMINUS, *cli_args("collect", tasks=corpus, out=out, splits="train", config=config, quiet=True)],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert records and {r["backend"] for r in records} == {"local"}
    # the local backend's commands see the host path, and the prompt says so
    assert all("/workspace\n" not in r["messages"][0]["content"] for r in records)


def test_the_collect_rule_passes_the_config_and_paths_only(tmp_path):
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "snakemake",
            "-n",
            "-p",
            "--configfile",
            "configs/paper.yaml",
            "--executor",
            "slurm",
            "--jobs",
            "20",
            "collect",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    text = done.stdout + done.stderr
    assert done.returncode == 0, text[-2000:]
    command = next(line for line in text.splitlines() if "terminus collect" in line)
    # the stage reads the workflow's config (paper.yaml, defaults filled) from the run folder: its sandbox and image,
    # and its teacher, splits, turns and concurrency (the rule passes the config and paths only, no copy of a value)
    assert "--config results/paper/config.yaml --quiet" in command
    assert not {"--concurrency", "--max-turns", "--policy", "--model", "--splits"} & set(command.split())
    # The file itself: a dry run writes nothing (issue 44), while any other reading of the workflow writes it; under
    # a run name of its own, so that no real run folder is touched.
    run = f"probe-{os.getpid()}"
    written = ROOT / "results" / run / "config.yaml"
    args = ["--list-rules", "--configfile", "configs/paper.yaml", "--config", f"run={run}"]
    try:
        made = subprocess.run(
            [*SNAKEMAKE, *args],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert made.returncode == 0, (made.stdout + made.stderr)[-2000:]
        merged = load_config(written)
    finally:
        shutil.rmtree(written.parent, ignore_errors=True)
    paper = load_yaml(ROOT / "configs/paper.yaml") | {"run": run}
    (expected := tmp_path / "paper.yaml").write_text(yaml.safe_dump(paper))
    assert merged["_hash"] == load_config(expected)["_hash"]  # paper.yaml, defaults filled, nothing else
    assert merged["sandbox_image"] == paper["sandbox_image"] and merged["collect"]["concurrency"] == 32


@pytest.fixture(scope="module")
def node_corpus(tmp_path_factory) -> Path:
    """Node projects: the registry-free image runs the host's /usr, where node lives (pytest is in pyenv here)."""
    synthetic = {"languages": ["node"], "repos_per_language": 1, "variants": ["fail"]}
    return synthetic_corpus(tmp_path_factory.mktemp("docker-corpus"), synthetic)


@pytest.mark.docker
def test_docker_runs_an_ordinary_task_end_to_end(node_corpus, docker_engine):
    corpus = node_corpus
    task = load_tasks(corpus)[0]
    traj = run_episode(
        task,
        corpus,
        make_policy("scripted"),
        sandbox=SandboxSpec("docker", docker_url=docker_engine),
        max_turns=10,
    )
    assert traj.backend == "docker" and traj.termination == "final_answer", traj.error
    assert "/workspace" in traj.messages[0]["content"] and str(corpus.parent) not in traj.messages[0]["content"]
    facts = check(traj.final_answer, task.facts, task.task_type, observations_of(traj.to_dict()["messages"]))
    assert facts.recall == 1.0 and facts.precision == 1.0


@pytest.mark.docker
def test_exec_with_docker_on_the_demo_project(docker_engine):
    env = {**os.environ, "DOCKER_HOST": docker_engine}
    done = subprocess.run(
        [
            TERMINUS,
            *cli_args("exec", repo=ROOT / "examples/demo-project", query="run the tests", sandbox="docker", json=True),
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    record = json.loads(done.stdout)
    assert record["backend"] == "docker" and record["final_answer"]


@pytest.mark.docker
def test_the_configs_sandbox_image_reaches_the_docker_backend(tmp_path, docker_engine):
    """`sandbox_image` travels down from the config as an argument (no environment variable carries it): an image
    the engine lacks is named in one line, the registry-free one runs the task."""
    synthetic = {"languages": ["node"], "repos_per_language": 1, "variants": ["fail"]}
    env = os.environ | {"DOCKER_HOST": docker_engine}

    def collect(image: str) -> tuple[subprocess.CompletedProcess, Path]:
        root = tmp_path / image.split(":")[1]
        root.mkdir()
        splits = {"train": 1.0, "val": 0.0, "test": 0.0}
        tasks = synthetic_corpus(root, synthetic, splits, sandbox="docker", sandbox_image=image)
        out = root / "trajectories.jsonl"
        args = cli_args("collect", tasks=tasks, out=out, splits="train", config=root / "config.yaml", quiet=True)
        return subprocess.run([TERMINUS, *args], capture_output=True, text=True, env=env, timeout=300), out

    done, _ = collect("terminus-sandbox:absent")
    assert done.returncode != 0 and "docker image 'terminus-sandbox:absent' is not present locally" in done.stderr
    done, out = collect("terminus-sandbox:host")
    assert done.returncode == 0, done.stderr
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert records and {(r["backend"], r["termination"]) for r in records} == {("docker", "final_answer")}
