"""`terminus dataset export`: a run folder's episodes as a `datasets` folder that loads, split by repository, with a
card and a stamp; a folder with nothing to export, or an output that is not empty, is refused and nothing written."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from builders import snapshot_task
from terminus.cli import app
from terminus.collect.collect import collect
from terminus.models import make_policy
from terminus.sandbox.spec import SandboxSpec
from terminus.tasks.record import write_tasks

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> Path:
    """A run folder with the teacher's trajectories on two repositories, one in train and one in val, and the
    committed eval records."""
    run = tmp_path_factory.mktemp("dataset") / "run"
    tasks = []
    for repo, split in (("alpha", "train"), ("beta", "val")):
        files = {"test_app.py": "def test_a():\n    assert 1 == 2\n", "pyproject.toml": "[project]\nname = 'app'\n"}
        tasks.append(snapshot_task(run / "tasks", repo, files, id=f"py-{repo}-fail-tests", split=split))
    write_tasks(run / "tasks" / "valid.jsonl", tasks)
    collect(run / "tasks" / "valid.jsonl", make_policy("scripted"), run / "collect" / "trajectories.jsonl",
            splits=("train", "val"), sandbox=SandboxSpec("local"), max_turns=10, concurrency=2,
            show_progress=False)  # fmt: skip
    (run / "eval").mkdir()
    (run / "eval" / "records.jsonl").write_text((ROOT / "results/cached/eval/records.jsonl").read_text())
    return run


def test_a_run_exports_as_a_dataset_that_loads_split_by_repository(run, tmp_path):
    from datasets import load_from_disk

    out = tmp_path / "ds"
    done = CliRunner().invoke(app, ["dataset", "export", "--run", str(run), "--out", str(out)])
    assert done.exit_code == 0, done.output
    data = load_from_disk(str(out))
    assert set(data) == {"train", "validation", "eval"}
    assert {r["repo"] for r in data["train"]} == {"alpha"} and {r["repo"] for r in data["validation"]} == {"beta"}
    first = data["train"][0]
    messages = json.loads(first["messages"])
    assert messages[0]["role"] == "system" and first["termination"] == "final_answer"
    assert json.loads(first["final_answer"])[0]["command"]
    committed = [json.loads(x) for x in (ROOT / "results/cached/eval/records.jsonl").read_text().splitlines()]
    assert len(data["eval"]) == len(committed) and data["eval"][0]["key"] == sorted(r["key"] for r in committed)[0]
    card = (out / "README.md").read_text()
    stamp = json.loads((out / "stamp.json").read_text())
    assert "license: apache-2.0" in card and "by repository" in card and stamp["splits"]["train"] == 1
    assert stamp["git_commit"] in card


def test_nothing_to_export_and_a_full_output_are_refused(run, tmp_path):
    empty = tmp_path / "empty-run"
    empty.mkdir()
    done = CliRunner().invoke(app, ["dataset", "export", "--run", str(empty), "--out", str(tmp_path / "a")])
    assert done.exit_code != 0 and "holds no episodes" in done.output
    full = tmp_path / "full"
    full.mkdir()
    (full / "keep.txt").write_text("mine")
    done = CliRunner().invoke(app, ["dataset", "export", "--run", str(run), "--out", str(full)])
    assert (
        done.exit_code != 0 and "not empty" in done.output and sorted(p.name for p in full.iterdir()) == ["keep.txt"]
    )
