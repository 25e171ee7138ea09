"""The scripted main agents' tool-call ids (issue 30): `tool_call` makes the message and `number_call` numbers it by
the episode's turn, so two processes give the same ids (ids from `hash()` changed with PYTHONHASHSEED) and no id
repeats within an episode."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from terminus.mainagent.brains import number_call, tool_call

EPISODES = r"""
import json
from types import SimpleNamespace

from terminus.mainagent.brains import ReplayMainAgent
from terminus.mainagent.reader import ReaderMainAgent

tools = [{"function": {"name": n}} for n in ("run_in_terminal", "read_file", "edit_file", "execution_subagent")]
calls = {}
fix = {"file": "calc.py", "line": 3, "old": "a - b", "new": "a + b"}
task = SimpleNamespace(id="t", language="python", meta={"fix": fix}, facts={"tests": {"failing": ["test_add"]}})
for delegate in (False, True):
    replay = ReplayMainAgent()
    replay.prepare(task)
    offered = tools if delegate else tools[:3]
    calls[f"replay delegate={delegate}"] = [replay.next_step([], offered) for _ in range(6)]
reader, outputs = ReaderMainAgent(), ["pyproject.toml\ncalc.py\ntests/test_calc.py", "1 passed"]
messages, replies = [], []
for output in [None, *outputs]:
    if output is not None:
        messages.append({"role": "tool", "content": output})
    replies.append(reader.next_step(messages, tools[:3]))
calls["reader"] = replies
print(json.dumps({k: [c["id"] for r in v for c in r.get("tool_calls") or []] for k, v in calls.items()}))
"""


def _ids(seed: str) -> dict:
    env = {**os.environ, "PYTHONHASHSEED": seed}
    done = subprocess.run([sys.executable, "-c", EPISODES], capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_two_processes_give_the_same_ids():
    first, second = _ids("1"), _ids("2")
    assert first == second
    assert first["replay delegate=False"] == [
        "call_1_run_in_terminal",
        "call_2_run_in_terminal",
        "call_3_read_file",
        "call_4_edit_file",
        "call_5_run_in_terminal",
    ]
    assert first["replay delegate=True"][0] == "call_1_execution_subagent"
    assert first["reader"][:2] == ["call_1_read_file", "call_2_run_in_terminal"]
    for ids in first.values():
        assert len(ids) == len(set(ids)), ids  # unique within an episode, as an API requires


def test_one_helper_makes_the_message():
    call = number_call(tool_call("read_file", path="src/a.py"), 3)["tool_calls"][0]
    assert call == {
        "id": "call_3_read_file",
        "type": "function",
        "function": {"name": "read_file", "arguments": '{"path": "src/a.py"}'},
    }
