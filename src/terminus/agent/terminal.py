"""The subagent's one tool: a terminal. One synchronous command per call, with an explicit timeout."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from terminus.sandbox import CommandResult, Sandbox

TOOL_NAME = "run_in_terminal"

TERMINAL_TOOL = {
    "type": "function",
    "function": {
        "name": TOOL_NAME,
        "description": (
            "Run one shell command in the repository's terminal and wait for it to finish. The working "
            "directory and exported variables persist between calls. Output (stdout and stderr interleaved) "
            "is returned with its exit code; very long output keeps its head and tail."
        ),
        "parameters": {
            "type": "object",
            "properties": {
                "command": {"type": "string", "description": "The shell command to run."},
                "timeout_ms": {
                    "type": "integer",
                    "description": "How long to wait before the command is killed, in milliseconds.",
                },
            },
            "required": ["command", "timeout_ms"],
        },
    },
}


class ToolCallError(ValueError):
    """The model's call cannot be executed as given; the message goes back to the model."""


@dataclass
class TerminalCall:
    command: str
    timeout_ms: int


def parse_arguments(arguments: object, max_timeout_ms: int) -> TerminalCall:
    """Validate a terminal call's arguments; the timeout is required and capped."""
    if not isinstance(arguments, dict):
        raise ToolCallError(f"{TOOL_NAME} takes a JSON object with 'command' and 'timeout_ms'")
    command = arguments.get("command")
    if not isinstance(command, str) or not command.strip():
        raise ToolCallError(f"{TOOL_NAME} needs a non-empty string 'command'")
    timeout = arguments.get("timeout_ms")
    if isinstance(timeout, str) and timeout.strip().isdigit():
        timeout = int(timeout.strip())
    if isinstance(timeout, bool) or not isinstance(timeout, int | float) or timeout <= 0:
        raise ToolCallError(f"{TOOL_NAME} needs 'timeout_ms', a positive number of milliseconds")
    return TerminalCall(command=command, timeout_ms=int(min(timeout, max_timeout_ms)))


# The status line that ends every observation. Readers of observations (`models/toolchains.read_status`) parse
# these same templates, so the format lives here only.
EXIT_STATUS = "[exit code {exit_code}]"
TIMEOUT_STATUS = "[command timed out after {seconds:.1f} s and was killed]"
CAPPED_STATUS = "[command killed after writing {size} bytes; it did not finish]"


def observation(result: CommandResult) -> str:
    """What the model reads after a command: its output, then how it ended."""
    text = result.output.rstrip("\n")
    if result.timed_out:
        status = TIMEOUT_STATUS.format(seconds=result.duration_s)
    elif result.output_capped:
        status = CAPPED_STATUS.format(size=result.output_bytes)
    else:
        status = EXIT_STATUS.format(exit_code=result.exit_code)
    return f"{text}\n{status}" if text else status


class Terminal:
    """Binds the tool to one sandbox for one episode."""

    def __init__(
        self, sandbox: Sandbox, max_timeout_ms: int = 600_000, on_command: Callable[[str], None] | None = None
    ) -> None:
        self.sandbox = sandbox
        self.max_timeout_ms = max_timeout_ms
        # Told each valid command before it runs: a client can show what a minutes-long episode is doing.
        self.on_command = on_command

    def __call__(self, arguments: object) -> tuple[TerminalCall, CommandResult]:
        call = parse_arguments(arguments, self.max_timeout_ms)
        if self.on_command is not None:
            self.on_command(call.command)
        return call, self.sandbox.run(call.command, call.timeout_ms / 1000)
