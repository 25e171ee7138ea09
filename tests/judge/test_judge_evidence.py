"""The LLM judge sees the evidence (issue 40): for a long real log, the prompt holds the output line each claim of the
candidate and of the reference rests on, as the fact checker found it (or says that no output holds it); group calls
take at most 4 candidates, at once, with the single prompt's level anchors; the reply budget holds the worst-case
reply, tokenized."""

from __future__ import annotations

import json
import re
import threading
import time

import pytest
import yaml

from builders import synthetic_corpus
from terminus.collect.collect import collect
from terminus.config import ROOT, load_config
from terminus.io import read_jsonl
from terminus.judge.facts import extract_claims
from terminus.judge.llm import GROUP_CHUNK, REASON_CHARS, JudgeError, LLMJudge
from terminus.judge.rubric import load_rubric
from terminus.judge.setup import judge_from_config, max_tokens
from terminus.mainagent.tokens import TokenCounter
from terminus.models import make_policy
from terminus.runspec import load_run
from terminus.sandbox.spec import SandboxSpec
from terminus.tasks.record import load_tasks, write_tasks

from .answers import variants

RUBRIC = load_rubric()
PAPER = yaml.safe_load((ROOT / "configs" / "paper.yaml").read_text())


@pytest.fixture(scope="module")
def long_log(tmp_path_factory) -> tuple[object, dict]:
    """The scripted expert through the real loop on a Python project whose failing tests each print a 95-line audit
    log: pytest prints ~210 lines (~10 KB, what the sandbox keeps of an output), the second failure's file:line in
    the middle."""
    root = tmp_path_factory.mktemp("long-log")
    synthetic = {"languages": ["python"], "repos_per_language": 1, "variants": ["fail"], "verbose_lines": 95}
    tasks_file = synthetic_corpus(root, synthetic)
    tasks = [t for t in load_tasks(tasks_file) if t.task_type == "test-execution"]
    for each in tasks:
        each.split = "train"
    write_tasks(tasks_file, tasks)
    collect(tasks_file, make_policy("scripted"), root / "expert.jsonl", splits=("train",), sandbox=SandboxSpec(),
            max_turns=10, concurrency=1, show_progress=False)  # fmt: skip
    (traj,) = read_jsonl(root / "expert.jsonl")
    assert traj["termination"] == "final_answer"
    return tasks[0], traj


def _judge(output_chars: int) -> LLMJudge:
    # No endpoint is called: the prompt is what is under test (built by the judge's own templates).
    return LLMJudge(RUBRIC, "m", concurrency=4, policy=object(), output_chars=output_chars)


def _claims(traj: dict) -> list:
    return [c for e in traj["final_answer"] for c in extract_claims(e["summary"])]


def test_the_prompt_for_a_long_log_holds_each_claims_grounding_line(long_log):
    task, reference = long_log
    log = [m["content"] for m in reference["messages"] if m["role"] == "tool"][-1]
    lines = log.splitlines()
    assert len(lines) > 200, len(lines)
    padded = variants(reference)["padded"]  # the expert's answer plus claims no output shows
    budget = PAPER["judge"]["output_chars"]
    assert budget >= 8192
    prompt = _judge(budget)._messages("single", query=task.query, reference=reference, candidate=padded)[1]["content"]
    head, tail = log[: budget // 2], log[len(log) - budget // 2 :]
    middle = []
    for traj in (reference, padded):
        for claim in _claims(traj):
            text = re.escape(f'"{claim.text}" ({claim.kind}): ')
            found = re.search(text + r"grounded in the output of command (\d+): (.+)", prompt)
            key = str(claim.value).split("::")[-1]
            if found is None:
                assert re.search(text + "not found in", prompt), claim
                assert claim.text not in log, f"{claim} is in the log, yet reported as found nowhere"
                continue
            assert found.group(1) == "2", claim  # the listing is command 1; pytest's run is command 2
            line = found.group(2)
            assert line in (x.strip() for x in lines), f"{line!r} is no line of the log"
            assert key in line or claim.text in line, (claim, line)
            if line not in head and line not in tail:
                middle.append(claim.text)
    assert any(c.text for c in _claims(padded) if f'"{c.text}"' in prompt and "not found" in prompt)
    # a file:line from the middle of the log, which the head and tail shown leave out, reaches the judge
    assert any(re.fullmatch(r"tests/test_\w+\.py:\d+", t) for t in middle), middle


def test_the_group_prompt_has_the_single_prompts_level_anchors(long_log):
    task, reference = long_log
    judge = _judge(800)
    single = judge._messages("single", query=task.query, reference=reference, candidate=reference)[1]["content"]
    group = judge._messages("group", query=task.query, reference=reference, candidates=[reference] * 2)[1]["content"]
    for dim in RUBRIC.dimensions.values():
        for level, text in dim.levels.items():
            anchor = f"{level}: {text}"
            assert anchor in single and anchor in group, (dim.name, anchor)


def _worst_reply(candidates: int) -> str:
    """Every dimension of every candidate with a reason of REASON_CHARS characters of the costliest words (tokens a
    character) of real expert answers (hashes, paths, test ids), the score at the top of its scale, indented as models
    write JSON; per tokenizer (Qwen's and cl100k)."""
    text = (ROOT / "configs" / "judge" / "labels" / "expert-episodes.jsonl").read_text()
    words = {w for row in map(json.loads, text.splitlines()) for e in row["reference"]["final_answer"]
             for w in e["summary"].split()}  # fmt: skip
    per_tokenizer = {}
    for name in ("qwen", "cl100k"):
        counter = TokenCounter(name)
        costly = sorted(words, key=lambda w: (-counter.text(" " + w) / len(w), w))
        reason = " ".join(costly)[:REASON_CHARS]
        dims = {n: {"reason": reason, "score": d.scale[1]} for n, d in RUBRIC.dimensions.items()}
        if candidates == 1:
            reply = {"dimensions": dims}
        else:
            reply = {"candidates": [{"index": i, "dimensions": dims} for i in range(candidates)]}
        per_tokenizer[name] = counter.text(json.dumps(reply, indent=2))
    return per_tokenizer


@pytest.mark.parametrize("group", [False, True])
@pytest.mark.parametrize("config", ["config.yaml", "paper.yaml"])
def test_the_reply_budget_holds_the_worst_case_reply(config, group):
    cfg = load_run(ROOT / "configs" / config).cfg.judge.model_copy(update={"group": group})
    budget = max_tokens(cfg, RUBRIC) - cfg.reasoning_tokens  # what is left for the reply itself
    worst = _worst_reply(GROUP_CHUNK if group else 1)
    assert all(budget >= n for n in worst.values()), (budget, worst)


def test_a_configured_budget_below_the_worst_case_is_an_error(tmp_path):
    cfg = load_config(ROOT / "configs" / "config.yaml")
    cfg["judge"] |= {"endpoint": {"model": "m", "base_url": "http://127.0.0.1:9/v1"}, "max_tokens": 2048}
    cfg["judge"]["group"] = True  # 12 dimensions x 4 candidates did not fit 2048 tokens (the paper's old setting)
    with pytest.raises(JudgeError, match="below the longest reply"), judge_from_config(cfg, tmp_path):
        pass


class CountingEndpoint:
    """Answers each group call with a verdict for as many candidates as its prompt shows, slowly, recording how many
    calls were in flight at once (the judge's threads are what is under test)."""

    def __init__(self) -> None:
        self.sizes, self.in_flight, self.most = [], 0, 0
        self.lock = threading.Lock()

    def respond(self, messages, tools):
        n = len(re.findall(r"^## Candidate \d+$", messages[1]["content"], re.M))
        with self.lock:
            self.sizes.append(n)
            self.in_flight += 1
            self.most = max(self.most, self.in_flight)
        time.sleep(0.3)
        with self.lock:
            self.in_flight -= 1
        dims = {name: {"reason": "r", "score": 1} for name in RUBRIC.dimensions}
        return {"content": json.dumps({"candidates": [{"index": i, "dimensions": dims} for i in range(n)]})}


def test_a_group_is_judged_in_chunks_of_at_most_four_at_once(long_log):
    task, reference = long_log
    endpoint = CountingEndpoint()
    judge = LLMJudge(RUBRIC, "m", concurrency=4, policy=endpoint)
    results = judge.score_group(task.query, reference, [reference] * 10)
    assert len(results) == 10 and not any(r.unparseable for r in results)
    assert sorted(endpoint.sizes) == [2, 4, 4]
    assert endpoint.most == 3  # the three chunks at once, within judge.concurrency
    endpoint = CountingEndpoint()
    LLMJudge(RUBRIC, "m", concurrency=2, policy=endpoint).score_group(task.query, reference, [reference] * 10)
    assert endpoint.most == 2
