"""The case study's pick (largest token gap at equal outcome, real repositories first) and the reliance columns of
summary.csv (direct terminal calls, subagent calls, rerun rate) on known records."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import pytest

from terminus.config import ROOT
from terminus.eval.case_study import case_study, pick_task
from terminus.eval.summary import summarise
from terminus.stats import wilson

ANSWER = "<final_answer>\nCommand: pytest -q\nSummary: 1 failed\n</final_answer>"


def record(task: str, sub: str, tokens: int, resolved: float = 1.0, source: str = "synthetic", **extra) -> dict:
    return {
        "main_agent": "reader",
        "subagent": sub,
        "benchmark": "repair",
        "seed": 0,
        "task_id": task,
        "source": source,
        "main_agent_tokens": tokens,
        "main_agent_turns": 5,
        "direct_terminal_calls": 0,
        "subagent_calls": 2,
        "resolved": resolved,
        "error": None,
        "rerun_rate": None,
        "subagent_episodes": [{"query": "run the tests", "commands": ["pytest -q"], "answer": ANSWER}],
        **extra,
    }


def test_the_pick_prefers_real_repositories_and_equal_outcomes():
    records = [
        record("syn-big", "none", 90_000),
        record("syn-big", "scripted", 10_000),  # the largest gap, synthetic
        record("reg-small", "none", 9_000, source="registry"),
        record("reg-small", "scripted", 6_000, source="registry"),
        record("reg-flip", "none", 99_000, 0.0, "registry"),
        record("reg-flip", "scripted", 1_000, 1.0, "registry"),
    ]
    assert pick_task(records, "scripted") == "reg-small"  # reg-flip changed outcome: not comparable
    assert pick_task([r for r in records if r["source"] == "synthetic"], "scripted") == "syn-big"
    study = case_study(records)
    assert study["task_id"] == "reg-small" and study["source"] == "registry" and study["token_ratio"] == 0.6667
    call = study["with_subagent"]["calls"][0]
    assert call["summary_tokens"] > 5 and study["with_subagent"]["subagent_commands"] == 1
    with pytest.raises(ValueError, match="same outcome"):
        pick_task([records[4], records[5]], "scripted")


def test_reliance_columns_with_intervals_and_paired_differences():
    records = []
    for i in range(10):
        records.append(record(f"t{i}", "none", 1000, direct_terminal_calls=3, subagent_calls=0))
        records.append(record(f"t{i}", "silent", 1100, direct_terminal_calls=3, subagent_calls=1, rerun_rate=1.0))
        records.append(
            record(f"t{i}", "scripted", 300, direct_terminal_calls=0, subagent_calls=3, rerun_rate=0.0 if i else 1 / 3)
        )
    rows = {r["subagent"]: r for r in summarise(records, {})}
    assert rows["silent"]["rerun_rate"] == 1.0 and rows["silent"]["direct_terminal_calls_diff"] == 0.0
    assert rows["scripted"]["direct_terminal_calls_diff"] == -3.0 and rows["scripted"]["subagent_calls_diff"] == 3.0
    scripted = rows["scripted"]
    # a rate: its Wilson interval at 10 tasks (not the bootstrap's, which would put the low end at 0)
    assert (scripted["rerun_rate_lo"], scripted["rerun_rate_hi"]) == pytest.approx(
        wilson(scripted["rerun_rate"], 10), abs=1e-4
    )
    assert 0.0 < scripted["rerun_rate_lo"] < scripted["rerun_rate"] < scripted["rerun_rate_hi"]
    assert rows["none"]["rerun_rate"] == ""  # no answers to rerun: no value, and no paired difference anywhere
    assert "rerun_rate_diff" in rows["scripted"] and rows["scripted"]["rerun_rate_diff"] == ""


def test_the_case_study_command_takes_its_task_from_the_config(tmp_path, monkeypatch):
    """The rule passes the config and paths only: `case-study --config` reads eval.case_study_task there (here set
    with --set), where the rule once passed the value as a flag; without it the largest saving picks."""
    monkeypatch.chdir(tmp_path)
    shutil.copytree(ROOT / "configs", tmp_path / "configs")
    records = ROOT / "results/cached/eval/records.jsonl"
    cli = [sys.executable, "-m", "terminus.cli", "case-study", "--records", str(records)]
    picked = subprocess.run([*cli, "--out", "picked.json"], capture_output=True, text=True, timeout=120)
    assert picked.returncode == 0, picked.stderr
    chosen = "cmake-geometry-fail-tests"
    assert json.loads((tmp_path / "picked.json").read_text())["task_id"] != chosen
    named = [*cli, "--out", "named.json", "--config", "configs/config.yaml", "--set", f"eval.case_study_task={chosen}"]
    done = subprocess.run(named, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert json.loads((tmp_path / "named.json").read_text())["task_id"] == chosen
