"""The last turn reads what training trains it on: the prompt of a final answer, rendered the way serving and
generation send it (local generation, an OpenAI-compatible endpoint as vLLM renders it) and the way SFT's data and
GRPO's rollouts train it, is one token sequence, tools block included (issue 43)."""

from __future__ import annotations

import pytest

from terminus.agent.loop import ANSWER_NOW, AgentConfig, ExecutionSubagent
from terminus.agent.template import CHAT_KWARGS, install
from terminus.models.generate import EpisodeTokens, encode
from terminus.models.openai_compat import OpenAIPolicy
from terminus.models.scripted import ScriptedPolicy
from terminus.sandbox import SandboxSpec, make_sandbox
from terminus.tasks.record import Task
from terminus.train.data import sft_row
from terminus.train.fit import sft_tokens


class Recorded:
    """The project's scripted policy, with what the loop sent it on each turn kept beside its replies."""

    name = "scripted"

    def __init__(self) -> None:
        self.policy, self.calls = ScriptedPolicy(), []

    def respond(self, messages, tools, tool_choice=None):
        self.calls.append((list(messages), list(tools), tool_choice))
        return self.policy.respond(messages, tools, tool_choice=tool_choice)


@pytest.fixture(scope="module")
def qwen_tok():
    """Qwen3-4B's tokenizer with the chat template the project ships (`agent.template`), as every stage loads it."""
    from terminus.train.arch import load_spec, qwen_tokenizer

    return install(qwen_tokenizer(load_spec()))


@pytest.fixture(scope="module")
def episode(tmp_path_factory):
    """A real episode that reaches its turn limit: a command, then the last turn, where it answers."""
    source = tmp_path_factory.mktemp("repo")
    (source / "pyproject.toml").write_text('[project]\nname = "demo"\n')
    (source / "test_demo.py").write_text("def test_ok():\n    assert True\n")
    policy = Recorded()
    with make_sandbox(SandboxSpec("local"), source) as box:
        traj = ExecutionSubagent(policy, box, AgentConfig(max_turns=2)).run("Run the tests.")
    assert traj.termination == "final_answer" and len(traj.turns) == 1, traj.error
    return traj, policy.calls


def _reply_ids(tokenizer, messages: list[dict], tools: list[dict], k: int) -> list[int]:
    """The token ids a model samples for the reply `messages[k]`: its rendering after the generation prompt, through
    its `<|im_end|>`."""
    prompt = tokenizer.apply_chat_template(messages[:k], tools=tools, add_generation_prompt=True, tokenize=False,
                                           **CHAT_KWARGS)  # fmt: skip
    whole = tokenizer.apply_chat_template(messages[: k + 1], tools=tools, tokenize=False, **CHAT_KWARGS)
    assert whole.startswith(prompt)
    reply = whole[len(prompt) :]
    reply = reply[: reply.index(tokenizer.eos_token) + len(tokenizer.eos_token)]
    return tokenizer(reply, add_special_tokens=False)["input_ids"]


def test_the_final_turn_is_served_as_it_is_trained(qwen_tok, episode):
    traj, calls = episode
    messages, tools, choice = calls[-1]
    assert choice == ANSWER_NOW and [t["function"]["name"] for t in tools] == ["run_in_terminal"]
    assert messages[-1]["content"] == "OK, your allotted iterations are finished. Show the <final_answer>."

    # serving: local generation (transformers and the in-process vLLM engine render the same way)
    local = encode(qwen_tok, messages, tools)
    # serving: an OpenAI-compatible endpoint gets the tools with tool_choice "none"; vLLM renders the tools then
    # (it leaves them out only when started with --exclude-tools-when-tool-choice-none, which `terminus serve` is not)
    body = OpenAIPolicy("subagent", base_url="http://127.0.0.1:1/v1").request(messages, tools, choice)
    assert body["tool_choice"] == "none" and body["tools"] == tools
    endpoint = qwen_tok.apply_chat_template(
        body["messages"], tools=body["tools"], add_generation_prompt=True, tokenize=True, return_dict=True,
        **CHAT_KWARGS,
    )["input_ids"]  # fmt: skip
    assert list(endpoint) == local

    # training, SFT: the final answer's context in the row `terminus sft-data` writes, tokenized as TRL does
    task = Task(id=traj.task_id or "t", language="python", source="synthetic", repo="demo", task_type="test",
                query=traj.query, facts={})  # fmt: skip
    row = sft_row(traj.to_dict(), task)
    sft = sft_tokens(qwen_tok, row)
    assert sft["input_ids"][: len(local)] == local
    # the loss starts on the answer's first token and runs through its <|im_end|>
    assert sft["assistant_masks"][len(local) - 1 :] == [0] + [1] * (len(sft["input_ids"]) - len(local) - 1) + [0]
    assert qwen_tok.decode(sft["input_ids"][len(local) :]).startswith("<final_answer>")

    # training, GRPO: the episode as the token sequence its rollout keeps, replayed turn by turn
    tokens = EpisodeTokens(qwen_tok, max_new_tokens=1024)
    for turn, (seen, offered, _) in enumerate(calls):
        prompt = tokens.prompt(seen, offered)
        if turn < len(calls) - 1:
            full = traj.messages[: len(seen) + 1]
            tokens.reply(_reply_ids(qwen_tok, full, offered, len(seen)), None)
    assert prompt == local
