"""The judge: tolerant parsing under fuzzing, retries and the unparseable record, the cache, rubric errors,
the key check; the fact checker on every corruption; the Scorer's reward is monotonic in fact recall."""

from __future__ import annotations

import doctest
import json
import random
import re
import shutil
import string
import threading
import time

import pytest
import yaml

from builders import task
from terminus.config import ROOT
from terminus.judge import scorer as scorer_module
from terminus.judge.facts import check
from terminus.judge.llm import JudgeError, LLMJudge, ParseError, loads_tolerant, parse_dimensions
from terminus.judge.rubric import DEFAULT_RUBRIC, RubricError, load_rubric
from terminus.judge.scorer import Scorer
from terminus.judge.validity import CORRUPTIONS, corrupt, labelled_pairs, validity_report

RUBRIC = load_rubric()


def verdict_json(score: int = 3, **overrides) -> str:
    dims = {
        name: {"reason": "seen in the output", "score": min(score, d.scale[1]) if d.kind == "quality" else 0}
        for name, d in RUBRIC.dimensions.items()
    }
    dims.update(overrides)
    return json.dumps({"dimensions": dims})


class ReplyQueue:
    """A deterministic policy for the judge's own logic (retries, cache): it answers from a list, in order.
    The judge against a real server is tested in test_judge_against_vllm_server."""

    name = "queue"

    def __init__(self, replies: list[str]) -> None:
        self.replies, self.calls = list(replies), 0

    def respond(self, messages, tools):
        self.calls += 1
        return {"content": self.replies.pop(0) if self.replies else "no verdict"}


def test_tolerant_parsing_of_common_shapes():
    good = verdict_json()
    for text in (
        good,
        f"```json\n{good}\n```",
        f"Here is my verdict:\n{good}\nThanks!",
        good[:-1] + ",}",
        good.replace('"score": 3', '"score": "3/4"'),
    ):
        scores, reasons = parse_dimensions(loads_tolerant(text), RUBRIC)
        assert scores["faithfulness"] == 3 and reasons["faithfulness"] == "seen in the output"
    scores, _ = parse_dimensions(loads_tolerant(verdict_json(faithfulness=99)), RUBRIC)
    assert scores["faithfulness"] == 4  # clamped to the scale
    with pytest.raises(ParseError, match="dimension 'completeness' is missing"):
        parse_dimensions({"dimensions": {"faithfulness": 3}}, RUBRIC)


def test_a_thousand_fuzzed_verdicts_never_crash():
    rng = random.Random(0)
    good = verdict_json()
    parsed = failed = 0
    for _ in range(1000):
        text = list(good)
        for _ in range(rng.randint(1, 12)):
            op = rng.random()
            at = rng.randrange(len(text) + 1)
            if op < 0.4 and text:
                del text[min(at, len(text) - 1)]
            elif op < 0.8:
                text.insert(at, rng.choice(string.printable + '{}[]":,\u00e9\u4e2d'))
            else:
                text = text[: rng.randrange(len(text) + 1)]
        try:
            parse_dimensions(loads_tolerant("".join(text)), RUBRIC)
            parsed += 1
        except ParseError:
            failed += 1
    assert parsed + failed == 1000 and parsed > 0 and failed > 0


def test_retry_then_unparseable_is_recorded_not_zero(tmp_path):
    judge = LLMJudge(
        RUBRIC, "m", concurrency=4, policy=ReplyQueue(["garbage", verdict_json(4)]), retries=2, cache_dir=tmp_path
    )
    result = judge.score("q", None, {"turns": [], "messages": []})
    assert not result.unparseable and result.attempts == 2 and result.score > 0.9
    hopeless = LLMJudge(RUBRIC, "m", concurrency=4, policy=ReplyQueue(["nope"] * 5), retries=2)
    result = hopeless.score("q", None, {"turns": [], "messages": []})
    assert result.unparseable and result.score is None and result.attempts == 3 and hopeless.unparseable == 1


def test_calls_are_cached_by_content(tmp_path):
    queue = ReplyQueue([verdict_json(2), verdict_json(2)])
    judge = LLMJudge(RUBRIC, "m", concurrency=4, policy=queue, cache_dir=tmp_path)
    episode = {"turns": [{"command": "pytest"}], "messages": [{"role": "tool", "content": "1 passed"}]}
    first = judge.score("run the tests", None, episode)
    again = judge.score("run the tests", None, episode)
    assert queue.calls == 1 and judge.hits == 1 and again.cached and again.scores == first.scores
    judge.score("run the tests please", None, episode)  # different content: a new call
    assert queue.calls == 2


def test_identical_items_in_one_batch_are_asked_once(tmp_path):
    """The validity report counts cache hits; two identical questions asked at once by two threads would hit or
    miss as timing decides (CI once saw 0 where the cached table had 1). One batch asks each question once."""
    episode = {"turns": [{"command": "pytest"}], "messages": [{"role": "tool", "content": "1 passed"}]}
    other = {"turns": [{"command": "make"}], "messages": [{"role": "tool", "content": "ok"}]}
    for _ in range(3):
        queue = ReplyQueue([verdict_json(2)] * 8)
        judge = LLMJudge(RUBRIC, "m", concurrency=4, policy=queue, cache_dir=tmp_path / str(random.random()))
        results = judge.score_many([("q", None, episode), ("q", None, other), ("q", None, episode)] * 2)
        assert queue.calls == 2 and judge.hits == 0 and judge.misses == 2
        assert len(results) == 6 and results[0] is results[2] is results[5] and results[1] is not results[0]


def test_group_mode_scores_each_candidate():
    dims = json.loads(verdict_json(1))["dimensions"]
    better = json.loads(verdict_json(4))["dimensions"]
    reply = json.dumps({"candidates": [{"index": 1, "dimensions": better}, {"index": 0, "dimensions": dims}]})
    judge = LLMJudge(RUBRIC, "m", concurrency=4, policy=ReplyQueue([reply]))
    low, high = judge.score_group("q", None, [{"turns": []}, {"turns": []}])
    assert high.score > low.score


def test_missing_key_is_checked_up_front(monkeypatch):
    monkeypatch.delenv("TERMINUS_TEST_JUDGE_KEY", raising=False)
    with pytest.raises(JudgeError, match="TERMINUS_TEST_JUDGE_KEY"):
        LLMJudge(
            RUBRIC, "gpt-x", concurrency=4, base_url="http://127.0.0.1:9/v1", api_key_env="TERMINUS_TEST_JUDGE_KEY"
        )


def test_unreachable_judge_endpoint_is_a_clear_error():
    judge = LLMJudge(RUBRIC, "m", concurrency=4, base_url="http://127.0.0.1:9/v1")
    judge.policy.max_retries = 0
    with pytest.raises(JudgeError, match="unreachable"):
        judge.score("q", None, {"turns": []})


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda r: r["quality"]["faithfulness"].pop("weight"), "dimension 'faithfulness' has no weight"),
        (
            lambda r: r["failures"].__setitem__("vibes", r["failures"]["hallucination"]),
            "unknown failure dimension 'vibes'",
        ),
        (lambda r: r["quality"]["completeness"].__setitem__("scale", [4, 0]), "scale must be"),
        (lambda r: r["quality"]["conciseness"].__setitem__("weight", "heavy"), "weight must be a number"),
    ],
)
def test_bad_rubric_files_are_named(edit, message, tmp_path):
    raw = yaml.safe_load(DEFAULT_RUBRIC.read_text())
    edit(raw)
    path = tmp_path / "rubric.yaml"
    path.write_text(yaml.safe_dump(raw))
    with pytest.raises(RubricError, match=message):
        load_rubric(path)


# -- fact checker and scorer on real expert episodes ---------------------------------------------------------
FAILING = ["tests/test_pay.py::test_net_pay_typical", "tests/test_pay.py::test_net_pay_zero"]
FACTS = {
    "tests": {"passed": 7, "failed": 2, "skipped": 0, "failing": FAILING},
    "error": {"type": "AssertionError", "locations": ["tests/test_pay.py:12"], "root_cause": "pay/pay.py:9"},
}
TASK = task(id="t1", repo="r", query="Run the tests and tell me what fails.", facts=FACTS)
OUTPUT = (
    "..F.F....\nFAILED tests/test_pay.py::test_net_pay_typical - assert 3 == 5\n"
    "FAILED tests/test_pay.py::test_net_pay_zero - assert 1 == 2\ntests/test_pay.py:12: AssertionError\n"
    "2 failed, 7 passed in 0.05s\n[exit code 1]"
)


def episode(summary: str, tid: str = "t1") -> dict:
    return {
        "id": f"e-{abs(hash(summary))}",
        "task_id": tid,
        "termination": "final_answer",
        "turns": [{"command": "python3 -m pytest -q", "timed_out": False}],
        "messages": [
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [
                    {"function": {"name": "run_in_terminal", "arguments": '{"command": "python3 -m pytest -q"}'}}
                ],
            },
            {"role": "tool", "content": OUTPUT},
        ],
        "final_answer": [{"command": "python3 -m pytest -q", "summary": summary}],
    }


FULL = (
    "pytest: 2 failed, 7 passed; failing: tests/test_pay.py::test_net_pay_typical, "
    "tests/test_pay.py::test_net_pay_zero; first failure: AssertionError at tests/test_pay.py:12."
)


@pytest.mark.parametrize("kind", CORRUPTIONS)
def test_fact_checker_ranks_each_corruption_below_the_truth(kind):
    good = episode(FULL)
    good["turns"].insert(0, {"command": "ls"})  # two commands, so that one can be dropped
    good["final_answer"].insert(0, {"command": "ls", "summary": "Found a python project."})
    bad = corrupt(good, kind, random.Random(0))
    assert bad is not None
    scorer = Scorer(tasks={"t1": TASK}, references={"t1": good})
    right, wrong = scorer.score([good, bad])
    assert right["reward"] > wrong["reward"], (kind, right, wrong)


def test_reward_is_monotonic_in_fact_recall():
    steps = [
        "pytest ran.",
        "pytest: 7 passed.",
        "pytest: 2 failed, 7 passed.",
        "pytest: 2 failed, 7 passed; failing: tests/test_pay.py::test_net_pay_typical.",
        FULL,
    ]
    scorer = Scorer(tasks={"t1": TASK})
    verdicts = scorer.score([episode(s) for s in steps])
    recalls = [v["fact_recall"] for v in verdicts]
    rewards = [v["reward"] for v in verdicts]
    assert recalls == sorted(recalls) and recalls[0] < recalls[-1] == 1.0
    assert rewards == sorted(rewards) and rewards[0] < rewards[-1]


def test_an_answer_with_no_command_behind_it_earns_nothing():
    """GRPO collapsed onto answering at once while that still earned the answer's form credit."""
    ran = episode("pytest ran.")
    at_once = {**ran, "turns": [], "messages": [], "final_answer": [{"command": "", "summary": "pytest ran."}]}
    scorer = Scorer(tasks={"t1": TASK})
    attempt, shortcut = scorer.score([ran, at_once])
    assert shortcut["reward"] == 0.0 and attempt["reward"] > 0.0


def test_hallucinated_claims_are_those_no_output_shows():
    result = check(
        episode("pytest: 3 failed, 7 passed; failing: test_imaginary.")["final_answer"],
        TASK.facts,
        "test-execution",
        OUTPUT,
    )
    assert "3 failed" in result.hallucinated and "test_imaginary" in result.hallucinated
    assert "7 passed" not in result.hallucinated and result.precision < 1


def test_validity_report_shape():
    trajectories = [episode(FULL)]
    report = validity_report(trajectories, {"t1": TASK}, None)
    assert set(report) >= {"fact_checker", "llm_judge", "agreement"}
    assert (
        report["fact_checker"]["n"] == len(labelled_pairs(trajectories)) and report["fact_checker"]["accuracy"] == 1.0
    )


def test_scorer_doctest():
    assert doctest.testmod(scorer_module).failed == 0


@pytest.mark.slow
def test_judge_against_vllm_server(tiny_model, tmp_path):
    """The whole path against a real OpenAI-compatible server: a tiny random model's replies are unparseable,
    which must be recorded as such, retried, and cached (a second run makes no calls)."""
    pytest.importorskip("vllm")
    from terminus.models.serve import vllm_server

    with vllm_server(tiny_model, served_name="tiny", log=tmp_path / "server.log") as url:
        judge = LLMJudge(
            RUBRIC, "tiny", concurrency=4, base_url=url, cache_dir=tmp_path / "cache", retries=1, max_tokens=32
        )
        results = judge.score_many([("q", None, episode(FULL)), ("q", None, episode("nothing"))])
        assert all(r.unparseable for r in results) and judge.misses == 4
        again = LLMJudge(
            RUBRIC, "tiny", concurrency=4, base_url=url, cache_dir=tmp_path / "cache", retries=1, max_tokens=32
        )
        again.score_many([("q", None, episode(FULL)), ("q", None, episode("nothing"))])
        assert again.hits == 4 and again.misses == 0


def test_one_factory_builds_every_stages_scorer_from_the_config(tmp_path, monkeypatch):
    """`terminus judge`, eval and GRPO's reward get their Scorer from `scorer_from_config`: the config's weights,
    judge (its concurrency from the schema) and `group`, one judge cache under the run's folder; eval scores each
    episode alone, so it never asks the group prompt."""
    from terminus.judge.setup import judge_cache_dir, scorer_from_config
    from terminus.runspec import load_run

    monkeypatch.chdir(tmp_path)
    shutil.copytree(ROOT / "configs/judge", tmp_path / "configs/judge")  # the config's rubric and prompts, from here
    weights = yaml.safe_load((ROOT / "configs/judge/scorer.yaml").read_text()) | {"format_weight": 0.3}
    (tmp_path / "scorer.yaml").write_text(yaml.safe_dump(weights))
    judge = {"endpoint": {"base_url": "http://127.0.0.1:9/v1", "model": "m"}, "group": True, "scorer": "scorer.yaml"}
    (tmp_path / "config.yaml").write_text(yaml.safe_dump({"run": "r", "tasks": {}, "judge": judge}))
    config = load_run("config.yaml").config
    tasks = {"t": task()}
    cache = judge_cache_dir(config)
    with scorer_from_config(config, tasks, cache) as scorer:
        assert scorer.group and scorer.config.format_weight == 0.3 and scorer.tasks == tasks
        assert scorer.judge.cache_dir == tmp_path / "results" / "r" / "judge" / "cache"
        assert scorer.judge.concurrency == config["judge"]["concurrency"]  # the schema's 8; no default in the class
    with scorer_from_config(config, tasks, cache, group=False) as scorer:
        assert not scorer.group and scorer.judge is not None
    with scorer_from_config(config, tasks, cache, no_llm=True) as scorer:
        assert scorer.judge is None and scorer.config.format_weight == 0.3


class SlowRecordingJudge:
    """A real policy for the judge that takes its time: each call sleeps, the calls in flight are counted, and each
    candidate the prompt shows (named by a `g<group>c<candidate>` mark in its answer) is scored by its mark, so
    that a result that lands in the wrong place shows."""

    name = "slow"

    def __init__(self, seconds: float) -> None:
        self.seconds, self.active, self.most, self.calls = seconds, 0, 0, 0
        self.lock = threading.Lock()

    def respond(self, messages, tools):
        with self.lock:
            self.calls += 1
            self.active += 1
            self.most = max(self.most, self.active)
        time.sleep(self.seconds)
        with self.lock:
            self.active -= 1
        marks = re.findall(r"\(g(\d)c(\d)\)", messages[-1]["content"])
        entries = [
            {"index": j, "dimensions": json.loads(verdict_json(mark_score(int(g), int(c))))["dimensions"]}
            for j, (g, c) in enumerate(marks)
        ]
        return {"content": json.dumps({"candidates": entries[::-1]})}  # out of order: the index places them


def mark_score(group: int, candidate: int) -> int:
    return (group + candidate) % 4 + 1


def test_a_steps_groups_are_judged_concurrently_in_order():
    """A GRPO step's 4 groups of 6 (2 calls each, GROUP_CHUNK 4) are judged at once, not one group after another,
    and every verdict comes back to its own episode, given interleaved."""
    groups, size, sleep = 4, 6, 0.3
    tasks = {f"t{g}": task(id=f"t{g}", repo="r", query=f"Query {g}.", facts=FACTS) for g in range(groups)}
    episodes = [episode(f"{FULL} (g{g}c{c})", f"t{g}") for c in range(size) for g in range(groups)]
    policy = SlowRecordingJudge(sleep)
    judge = LLMJudge(RUBRIC, "m", concurrency=32, policy=policy)
    start = time.monotonic()
    verdicts = Scorer(tasks=tasks, judge=judge, group=True).score(episodes)
    elapsed = time.monotonic() - start
    assert policy.calls == groups * 2 and policy.most == groups * 2, (policy.calls, policy.most)
    assert elapsed < 3 * sleep, f"{elapsed:.2f} s: the groups were judged one after another"
    for ep, verdict in zip(episodes, verdicts, strict=True):
        g, c = map(int, re.search(r"\(g(\d)c(\d)\)", ep["final_answer"][0]["summary"]).groups())
        assert verdict["task_id"] == f"t{g}" and verdict["trajectory_id"] == ep["id"]
        want = {n: d["score"] for n, d in json.loads(verdict_json(mark_score(g, c)))["dimensions"].items()}
        assert {n: d["score"] for n, d in verdict["dimensions"].items()} == want, (g, c)
