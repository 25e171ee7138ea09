"""History-reading commands are counted per episode, the main agent's and the subagent's, and reported per cell."""

from __future__ import annotations

import csv

import pytest

from terminus.eval.metrics import history_reads
from terminus.eval.summary import summarise, write_csv

READS = [
    "git log --all --oneline",
    "cd /app && git log --all --format='%H %s' | head -20",
    "git log -S'ParseSize' --oneline",
    "git log -G 'def split' -- ledger/money.py",
    "git show 3f2a9c1",
    "git show 3f2a9c1d:size.go | head",
    "git reflog",
    "git --no-pager reflog show --all",
    "git -C /app rev-list --all | wc -l",
    "git cat-file -p 58d1845",
    "bash -c 'git log --all | grep -i fix'",
    "GIT_PAGER=cat git log --branches --oneline",
    "ls\ngit log --tags",
    "x=$(git rev-list --all) && echo $x",
]
KEEPS = [
    "git log --oneline -5",
    "git log -p -- size.go",
    "git show HEAD",
    "git show --stat",
    "git status && git diff",
    "git rev-list HEAD --count",
    "echo 'git log --all'",
    "grep -rn 'git reflog' docs/",
    "pytest -q tests/test_money.py",
]


@pytest.mark.parametrize("command", READS)
def test_a_command_that_reads_history_counts(command):
    assert history_reads(command) == 1


@pytest.mark.parametrize("command", KEEPS)
def test_a_command_within_the_base_commit_does_not(command):
    assert history_reads(command) == 0


def test_the_record_and_the_summary_carry_the_count(tmp_path):
    from terminus.eval.main_episode import history_fields

    episodes = [{"commands": ["ls", "git log --all"]}, {"commands": ["git reflog", "pytest -q"]}]
    fields = history_fields(["git status", "git show 58d1845"], episodes)
    assert fields == {"history_commands": 3, "subagent_history_commands": 2}
    cell = {"main_agent": "llm", "subagent": "sft", "benchmark": "swebench-pro", "seed": 0}
    records = [cell | {"task_id": "a"} | fields, cell | {"task_id": "b", "history_commands": 0}]
    (row,) = summarise(records, {"config_hash": "x"})
    assert row["history_commands"] == 1.5
    write_csv([row], tmp_path / "summary.csv")
    (read,) = csv.DictReader((tmp_path / "summary.csv").open())
    assert read["history_commands"] == "1.5"
