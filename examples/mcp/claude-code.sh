#!/bin/sh
# Register Terminus with Claude Code: run this in your project (the server works on the folder Claude Code runs in,
# which must be a git work tree; elsewhere add --repo DIR).
# `terminus serve MODEL` prints the --model and --base-url to use. Long builds: raise MCP_TOOL_TIMEOUT (ms).
# A client started outside the venv does not find a bare `terminus`: `terminus mcp --print-config claude` with the
# same flags prints this line with the absolute path of this install's terminus.
claude mcp add terminus -- terminus mcp --policy openai --model terminus --base-url http://127.0.0.1:8000/v1
