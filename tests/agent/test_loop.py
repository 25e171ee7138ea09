"""The subagent loop against the real local sandbox, driven by fixed reply sequences (no mocks)."""

from __future__ import annotations

import json
import random
import re
import signal
import subprocess
import sys
import time

import pytest

from terminus.agent.loop import AgentConfig, ExecutionSubagent, Prompts
from terminus.agent.parsing import parse_final_answer, parse_tool_calls
from terminus.mainagent.harness import MainPrompts
from terminus.sandbox import SandboxSpec, make_sandbox


class FixedReplies:
    """A policy that plays back a list of replies (a deterministic stand-in for a model)."""

    name = "fixed"

    def __init__(self, replies):
        self.replies = list(replies)
        self.seen_tools = []
        self.seen_choices = []

    def respond(self, messages, tools, tool_choice=None):
        self.seen_tools.append([t["function"]["name"] for t in tools])
        self.seen_choices.append(tool_choice)
        return self.replies.pop(0) if self.replies else {"content": "nothing more to say"}


def call(command, timeout_ms=5000):
    payload = json.dumps({"name": "run_in_terminal", "arguments": {"command": command, "timeout_ms": timeout_ms}})
    return {"content": f"<tool_call>\n{payload}\n</tool_call>"}


TEN = AgentConfig(max_turns=10)  # the paper's turn limit
FINAL = {"content": "<final_answer>\nCommand: echo hi\nSummary: printed hi\n</final_answer>"}


@pytest.fixture
def box():
    with make_sandbox(SandboxSpec("local")) as sandbox:
        yield sandbox


def test_final_answer_ends_the_episode(box):
    policy = FixedReplies([call("echo hi"), FINAL])
    traj = ExecutionSubagent(policy, box, TEN).run("say hi")
    assert traj.termination == "final_answer"
    assert traj.final_answer == [{"command": "echo hi", "summary": "printed hi"}]
    assert [t.command for t in traj.turns] == ["echo hi"] and traj.turns[0].exit_code == 0
    assert traj.messages[3] == {"role": "tool", "name": "run_in_terminal", "content": "hi\n[exit code 0]"}


def test_turn_limit_withdraws_tools_and_asks_for_the_answer(box):
    policy = FixedReplies([call("echo 1"), call("echo 2"), call("echo 3"), call("echo 4")])
    traj = ExecutionSubagent(policy, box, AgentConfig(max_turns=3)).run("loop")
    assert traj.termination == "turn_limit"
    assert len(traj.turns) == 2
    # the last turn keeps the tools block (the context the model is trained in) and asks for no call
    assert policy.seen_tools[-1] == ["run_in_terminal"] and policy.seen_choices == [None, None, "none"]
    assert traj.messages[-2]["content"] == "OK, your allotted iterations are finished. Show the <final_answer>."


def test_answer_on_the_last_turn_counts(box):
    policy = FixedReplies([call("echo 1"), FINAL])
    traj = ExecutionSubagent(policy, box, AgentConfig(max_turns=2)).run("q")
    assert traj.termination == "final_answer"


def test_timeout_forces_the_answer_and_adds_a_note(box):
    policy = FixedReplies([call("sleep 30", timeout_ms=300), FINAL, call("echo never")])
    traj = ExecutionSubagent(policy, box, TEN).run("q")
    assert traj.termination == "timeout_forced"
    assert traj.turns[0].timed_out and policy.seen_choices[-1] == "none"
    assert traj.final_answer is not None
    assert traj.notes == ["Note: the command `sleep 30` timed out after 0 s; its result is incomplete."]


@pytest.mark.parametrize(
    "command",
    ["python3 -c 'input(\"Proceed? \")'", "printf 'Do you want to continue? [Y/n] '; read a; exit 1"],
)
def test_waiting_for_input_forces_the_answer_and_adds_a_note(box, command):
    policy = FixedReplies([call(command), FINAL, call("echo never")])
    traj = ExecutionSubagent(policy, box, TEN).run("q")
    assert traj.termination == "input_forced" and policy.seen_choices[-1] == "none"
    assert traj.final_answer is not None and len(traj.turns) == 1
    assert traj.notes and "waited for interactive input" in traj.notes[0]


def test_an_ordinary_failure_is_not_an_input_wait(box):
    replies = FixedReplies([call("echo 'build failed: missing header'; exit 2"), FINAL])
    traj = ExecutionSubagent(replies, box, TEN).run("q")
    assert traj.termination == "final_answer" and not traj.notes


def test_format_errors_get_feedback_then_end_the_episode(box):
    bad = [{"content": "I will run ls"}, {"content": "<tool_call>{not json</tool_call>"}, call("")]
    traj = ExecutionSubagent(FixedReplies(bad), box, AgentConfig(max_turns=10, max_format_errors=3)).run("q")
    assert traj.termination == "format_error" and traj.format_errors == 3
    feedback = [m["content"] for m in traj.messages if m["role"] == "user"][1:]
    assert len(feedback) == 3 and all("could not be used" in text for text in feedback)


def test_a_good_call_resets_the_format_error_count(box):
    replies = [{"content": "hm"}, call("true"), {"content": "hm"}, call("true"), {"content": "hm"}, FINAL]
    traj = ExecutionSubagent(FixedReplies(replies), box, AgentConfig(max_turns=10, max_format_errors=2)).run("q")
    assert traj.termination == "final_answer" and traj.format_errors == 3


def test_openai_style_tool_calls_are_accepted(box):
    reply = {
        "content": None,
        "tool_calls": [
            {
                "id": "c1",
                "type": "function",
                "function": {
                    "name": "run_in_terminal",
                    "arguments": json.dumps({"command": "echo ok", "timeout_ms": 1000}),
                },
            }
        ],
    }
    traj = ExecutionSubagent(FixedReplies([reply, FINAL]), box, TEN).run("q")
    assert traj.turns[0].command == "echo ok"
    assert traj.messages[3]["tool_call_id"] == "c1"


def test_a_crashing_policy_is_recorded(box):
    class Broken:
        name = "broken"

        def respond(self, messages, tools, tool_choice=None):
            raise ConnectionError("endpoint went away")

    traj = ExecutionSubagent(Broken(), box, TEN).run("q")
    assert traj.termination == "crash" and "endpoint went away" in traj.error


def _junk(rng: random.Random) -> dict:
    pieces = [
        "<tool_call>",
        "</tool_call>",
        "<final_answer>",
        "</final_answer>",
        "Command:",
        "Summary:",
        "{",
        "}",
        '"name"',
        '"arguments"',
        '"run_in_terminal"',
        ":",
        ",",
        '"command"',
        '"timeout_ms"',
        "5",
        '"echo x"',
        "<think>",
        "</think>",
        "\n",
        "null",
        "[",
        "]",
        "\x00",
        "\ud7ff",
        "true",
    ]
    text = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 30)))
    if rng.random() < 0.3:
        text = text[: rng.randint(0, len(text))]
    reply: dict = {"content": text}
    if rng.random() < 0.2:
        odd = [[None], [{"function": {"name": 3}}], [{"function": {"arguments": "{"}}], "x"]
        reply["tool_calls"] = rng.choice([*odd, [{"function": {"name": "run_in_terminal", "arguments": text}}]])
    return reply


def test_fuzzed_model_output_never_crashes_the_loop(box):
    rng = random.Random(0)
    for _ in range(1000):
        reply = _junk(rng)
        try:  # the parsers alone, on every reply
            parse_final_answer(reply["content"])
            parse_tool_calls(reply)
        except ValueError:
            pass
    crashes = 0
    for _ in range(100):  # and whole episodes of junk
        traj = ExecutionSubagent(FixedReplies([_junk(rng) for _ in range(12)]), box, AgentConfig(max_turns=4)).run("q")
        crashes += traj.termination == "crash"
    assert crashes == 0


def test_trajectory_file_is_valid_after_a_kill_mid_episode(tmp_path):
    out = tmp_path / "traj.json"
    script = f"""
import json, sys
sys.path.insert(0, {str(__import__("pathlib").Path(__file__).parent)!r})
from test_loop import FixedReplies, call
from terminus.agent.loop import AgentConfig, ExecutionSubagent
from terminus.sandbox import SandboxSpec, make_sandbox
box = make_sandbox(SandboxSpec("local"))
replies = FixedReplies([call("echo one"), call("echo two"), call("sleep 60", 120000)])
ExecutionSubagent(replies, box, AgentConfig(max_turns=10)).run("q", save_to=__import__('pathlib').Path({str(out)!r}))
"""
    proc = subprocess.Popen([sys.executable, "-c", script])
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if out.exists() and len(json.loads(out.read_text())["turns"]) >= 2:
            break
        time.sleep(0.1)
    time.sleep(0.5)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    record = json.loads(out.read_text())
    assert [t["command"] for t in record["turns"]] == ["echo one", "echo two"]
    assert record["termination"] is None and record["schema"] == "terminus.trajectory/1"


def test_an_interrupt_keeps_the_reply_it_cut_off(box, tmp_path, monkeypatch):
    """Saved after every turn, and on the way out: Ctrl-C in the middle of a command keeps the call that started it."""
    out, real = tmp_path / "traj.json", box.run

    def run(command, *args, **kwargs):
        if "echo two" in command:
            raise KeyboardInterrupt
        return real(command, *args, **kwargs)

    monkeypatch.setattr(box, "run", run)
    with pytest.raises(KeyboardInterrupt):
        ExecutionSubagent(FixedReplies([call("echo one"), call("echo two")]), box, TEN).run("q", save_to=out)
    record = json.loads(out.read_text())
    assert [t["command"] for t in record["turns"]] == ["echo one"]
    assert "echo two" in record["messages"][-1]["content"] and record["messages"][-1]["role"] == "assistant"


@pytest.mark.parametrize(("make", "what"), [(Prompts, "prompt file"), (MainPrompts, "main-agent prompt file")])
def test_a_prompt_file_without_every_key_is_named(tmp_path, make, what):
    """The subagent's and the main agent's prompts load through one class; each names its own file and keys."""
    path = tmp_path / "prompts.yaml"
    path.write_text("system: hi\n")
    with pytest.raises(ValueError, match=re.escape(f"{what} {path} lacks the keys ['user'")):
        make(path)
    path.write_text("system: [unclosed\n")
    with pytest.raises(ValueError, match=re.escape(f"cannot read {what} {path}:")):
        make(path)


def test_the_saved_record_is_the_episodes_last_state_however_it_ends(box, tmp_path):
    """`save_to` is written after every turn and, in a `finally`, when the episode ends: an interrupt between turns
    (here as the second command is about to run) leaves the reply that asked for it, not only the turn before."""
    out = tmp_path / "traj.json"

    def interrupt_second(command: str) -> None:
        if command == "echo two":
            raise KeyboardInterrupt

    agent = ExecutionSubagent(FixedReplies([call("echo one"), call("echo two")]), box, TEN, interrupt_second)
    with pytest.raises(KeyboardInterrupt):
        agent.run("q", save_to=out)
    record = json.loads(out.read_text())
    assert [t["command"] for t in record["turns"]] == ["echo one"]
    last = record["messages"][-1]
    assert last["role"] == "assistant" and "echo two" in last["content"]
