#!/bin/sh
# Register Terminus with Claude Code: run this in your project (the server works on the folder Claude Code runs in,
# which must be a git work tree; elsewhere add --repo DIR).
# `terminus serve MODEL` prints the --model and --base-url to use. Long builds: raise MCP_TOOL_TIMEOUT (ms).
claude mcp add terminus -- terminus mcp --policy openai --model terminus --base-url http://127.0.0.1:8000/v1
