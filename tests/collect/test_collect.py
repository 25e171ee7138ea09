"""Validation, collection (resume after kill -9) and the SFT dataset, on a small real corpus."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

from builders import TERMINUS, cli_args, kill_when, lines_done, synthetic_corpus
from terminus.collect.collect import collect
from terminus.collect.validate import validate_tasks
from terminus.models import make_policy
from terminus.sandbox.spec import SandboxSpec
from terminus.tasks.record import load_tasks, write_tasks

LOCAL = {"sandbox": SandboxSpec(), "max_turns": 10, "show_progress": False}  # default backend, paper turns


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> Path:
    synthetic = {"languages": ["python", "node"], "repos_per_language": 3, "variants": ["pass", "fail", "missing-dep"]}
    return synthetic_corpus(tmp_path_factory.mktemp("corpus"), synthetic)


def test_validate_keeps_reproducible_tasks_and_drops_wrong_facts(corpus, tmp_path):
    tasks = load_tasks(corpus)
    tampered = tasks[0]
    tampered.facts = json.loads(json.dumps(tampered.facts))
    if "tests" in tampered.facts:
        tampered.facts["tests"]["passed"] += 1
    else:
        tampered.facts["dependency"]["package"] = "left-pad"
    bad_file = corpus.parent / "tampered.jsonl"
    write_tasks(bad_file, tasks)
    report = validate_tasks(bad_file, tmp_path / "valid.jsonl", tmp_path / "report.json", **LOCAL, concurrency=4)
    assert report["dropped"] == 1 and tampered.id in report["reasons"]
    kept = load_tasks(tmp_path / "valid.jsonl")
    assert len(kept) == len(tasks) - 1
    assert all(t.workspace_path(tmp_path / "valid.jsonl").is_dir() for t in kept)  # paths rewritten


def test_interrupted_collection_resumes_to_an_identical_file(corpus, tmp_path):
    reference = tmp_path / "reference.jsonl"
    collect(corpus, make_policy("scripted"), reference, splits=("train", "val", "test"), **LOCAL, concurrency=2)
    out = tmp_path / "resumed.jsonl"
    part = out.with_name(out.name + ".part")
    command = [
        TERMINUS,
        *cli_args("collect", tasks=corpus, out=out, splits="train,val,test", concurrency=1, quiet=True),
    ]
    kill_when(command, lambda: lines_done(part) >= 3)
    assert part.exists() and not out.exists()  # killed mid-run
    before = [line for line in part.read_text().splitlines() if line.strip()]
    total = len(reference.read_text().splitlines())
    assert 3 <= len(before) < total
    with part.open("a") as fh:  # a torn last line, as a kill during a write leaves it
        fh.write('{"id": "half')
    subprocess.run(command, check=True, capture_output=True)
    lines = out.read_text().splitlines()
    assert set(before) <= set(lines)  # what was done is kept byte for byte, not redone
    ids = [json.loads(line)["id"] for line in lines]
    assert len(ids) == len(set(ids)) == total and ids == sorted(ids)
    # Identical to the uninterrupted run, except the runners' own wall-clock figures ("in 0.03s") in the output.
    assert untimed(out.read_text()) == untimed(reference.read_text())
    # a second rerun has nothing to do and changes nothing
    finished = out.read_bytes()
    subprocess.run(command, check=True, capture_output=True)
    assert out.read_bytes() == finished


def untimed(text: str) -> str:
    return re.sub(r"\d+(\.\d+)?\s?(ms|s)\b|duration_ms[\\\"': ]+[\d.]+", "T", text)


def test_sft_dataset_is_chat_with_tool_calls(corpus, tmp_path):
    from datasets import load_from_disk

    from terminus.train.data import build_sft_dataset

    trajectories = tmp_path / "t.jsonl"
    collect(corpus, make_policy("scripted"), trajectories, **LOCAL, concurrency=2)
    counts = build_sft_dataset(trajectories, corpus, tmp_path / "sft")
    data = load_from_disk(str(tmp_path / "sft"))
    assert len(data["train"]) == counts["train"] > 0
    row = data["train"][0]
    roles = [m["role"] for m in row["messages"]]
    assert roles[:2] == ["system", "user"] and roles[-1] == "assistant" and "tool" in roles
    call = next(m for m in row["messages"] if m["tool_calls"])["tool_calls"][0]
    assert call["function"]["name"] == "run_in_terminal" and "command" in json.loads(call["function"]["arguments"])
    assert row["tools"][0]["function"]["name"] == "run_in_terminal"
    assert "<final_answer>" in row["messages"][-1]["content"]
    assert set(counts["by_language"]) == {"python", "node"}
