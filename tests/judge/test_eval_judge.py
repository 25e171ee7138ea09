"""Training reward and evaluation metric apart, and judge validity that is not circular (issue 40): eval reads its
own judge (`eval.judge`, the fact checker alone by default), never a subagent under test; people's labels are read by
judge-validity and each scorer's agreement with them reported."""

from __future__ import annotations

import json
import shutil

import pytest
import yaml
from typer.testing import CliRunner

from builders import cli_args
from terminus.cli import app
from terminus.config import ROOT, load_config
from terminus.judge.llm import JudgeError
from terminus.judge.setup import check_judge_apart, judge_from_config, judge_settings, scorer_from_config
from terminus.judge.validity import LABELS, load_labels
from terminus.runspec import typed
from terminus.tasks.record import Task, write_tasks


def _endpoint(model: str) -> dict:
    return {"base_url": "http://127.0.0.1:9/v1", "model": model, "api_key_env": "HOME"}


def test_eval_reads_its_own_judge_and_by_default_the_fact_checker_alone(tmp_path):
    cfg = load_config(ROOT / "configs" / "config.yaml")
    cfg["judge"]["endpoint"] = _endpoint("training-judge")  # GRPO's reward through an LLM judge
    assert judge_settings(cfg, "eval").endpoint is None
    with scorer_from_config(cfg, {}, tmp_path, stage="eval") as scorer:
        assert scorer.judge is None and not scorer.group
    with judge_from_config(cfg, tmp_path) as judge:  # the training judge is still GRPO's
        assert judge.model == "training-judge"
    cfg["eval"]["judge"] = {"endpoint": _endpoint("eval-judge"), "output_chars": 4096, "scorer": None}
    with judge_from_config(cfg, tmp_path, stage="eval") as judge:
        assert (judge.model, judge.output_chars) == ("eval-judge", 4096)


def test_a_subagent_under_test_never_judges_itself(tmp_path):
    cfg = load_config(ROOT / "configs" / "config.yaml")
    cfg["eval"]["subagents"].append({"name": "frontier", "policy": "openai", "model": "gpt-5.3-codex"})
    cfg["eval"]["judge"] = {"endpoint": _endpoint("openai/GPT-5.3-codex")}
    with (
        pytest.raises(JudgeError, match="subagent under test 'frontier'"),
        judge_from_config(cfg, tmp_path, stage="eval"),
    ):
        pass
    with scorer_from_config(cfg, {}, tmp_path, no_llm=True, stage="eval") as scorer:  # no judge, nothing to refuse
        assert scorer.judge is None


def test_the_paper_evaluates_with_a_judge_of_another_family_than_its_reward():
    paper = load_config(ROOT / "configs" / "paper.yaml")
    reward, metric = paper["judge"]["endpoint"]["model"], paper["eval"]["judge"]["endpoint"]["model"]
    assert reward.split("-")[0] != metric.split("-")[0], (reward, metric)
    check_judge_apart(typed(paper).eval)  # none of its subagents is its judge
    assert "eval" not in paper["judge"]["llm_stages"]


def test_judge_validity_reports_each_scorers_agreement_with_peoples_labels(tmp_path):
    rows = load_labels()
    assert len(rows) >= 3 and {r["who"] for r in rows} == {"helper (issue 40)"}
    labels = tmp_path / "labels"
    labels.mkdir()
    shutil.copy(LABELS / "expert-episodes.jsonl", labels / "a.jsonl")
    flipped = dict(rows[0], label="incorrect" if rows[0]["label"] == "correct" else "correct")  # one label no
    flipped.pop("file")  # scorer shares
    (labels / "b.jsonl").write_text(json.dumps(flipped) + "\n")
    tasks = [Task(**r["task"], split="test") for r in rows]
    write_tasks(tmp_path / "tasks.jsonl", tasks)
    expert = [r["reference"] | {"task_id": r["task"]["id"]} for r in rows]
    (tmp_path / "expert.jsonl").write_text("".join(json.dumps(t) + "\n" for t in expert))
    out = tmp_path / "validity.json"
    config = yaml.safe_load((ROOT / "configs" / "config.yaml").read_text())
    config["judge"]["serve"] = None  # the fact checker alone: the labels' reading is under test, not a tiny judge
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(config))
    args = cli_args(
        "judge-validity",
        trajectories=tmp_path / "expert.jsonl",
        tasks=tmp_path / "tasks.jsonl",
        out=out,
        labels=labels,
        config=tmp_path / "config.yaml",
    )
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    report = json.loads(out.read_text())["labels"]
    n = len(rows) + 1
    assert report["n"] == n and report["llm_judge"] is None
    assert report["fact_checker"] == round(len(rows) / n, 4)  # it agrees with every honest label, not the flipped
    assert sorted(report["files"]) == [str(labels / "a.jsonl"), str(labels / "b.jsonl")]


def test_judge_validity_llm_refuses_a_config_without_an_llm_judge(tmp_path):
    (tmp_path / "config.yaml").write_text(yaml.safe_dump({"run": "t", "tasks": {}, "judge": {"serve": None}}))
    (tmp_path / "none.jsonl").write_text("")
    args = cli_args(
        "judge-validity",
        llm=True,
        trajectories=tmp_path / "none.jsonl",
        tasks=tmp_path / "none.jsonl",
        config=tmp_path / "config.yaml",
    )
    result = CliRunner().invoke(app, args)
    assert result.exit_code != 0 and "names no LLM judge" in str(result.output) + str(result.exception)
