"""How the tests start `terminus mcp` as an MCP client would: the installed command, a minimal environment."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from mcp import StdioServerParameters


def terminus_argv(*args: str) -> list[str]:
    """The installed `terminus` command of this interpreter's environment (the contract names it)."""
    script = Path(sys.executable).parent / "terminus"
    return [str(script), *args] if script.is_file() else [sys.executable, "-m", "terminus.cli", *args]


def server_env(**extra: str) -> dict[str, str]:
    # The SDK starts servers with a minimal environment; PYTHONPATH keeps a source checkout importable.
    env = {"PATH": os.environ["PATH"], "PYTHONPATH": os.environ.get("PYTHONPATH", "")}
    return env | extra


def params(*args: str, **env: str) -> StdioServerParameters:
    argv = terminus_argv("mcp", *args)
    return StdioServerParameters(command=argv[0], args=argv[1:], env=server_env(**env))


def text_of(result) -> str:
    return "\n".join(block.text for block in result.content if block.type == "text")
