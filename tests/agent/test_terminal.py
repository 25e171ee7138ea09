from __future__ import annotations

import pytest

from terminus.agent.terminal import Terminal, ToolCallError, observation, parse_arguments
from terminus.sandbox import SandboxSpec, make_sandbox


@pytest.mark.parametrize(
    "arguments",
    [
        None,
        [],
        {},
        {"command": ""},
        {"command": "ls"},
        {"command": "ls", "timeout_ms": -1},
        {"command": "ls", "timeout_ms": True},
        {"command": 3, "timeout_ms": 100},
    ],
)
def test_bad_arguments_are_tool_errors(arguments):
    with pytest.raises(ToolCallError):
        parse_arguments(arguments, 10_000)


def test_timeout_is_required_and_capped():
    assert parse_arguments({"command": "ls", "timeout_ms": "5000"}, 10_000).timeout_ms == 5000
    assert parse_arguments({"command": "ls", "timeout_ms": 10**9}, 10_000).timeout_ms == 10_000


def test_observation_reports_how_the_command_ended():
    with make_sandbox(SandboxSpec("local")) as box:
        terminal = Terminal(box, max_timeout_ms=60_000)
        _, ok = terminal({"command": "echo hi; false", "timeout_ms": 5000})
        assert observation(ok) == "hi\n[exit code 1]"
        call, slow = terminal({"command": "sleep 5", "timeout_ms": 300})
        assert call.timeout_ms == 300
        assert observation(slow).startswith("[command timed out after")
