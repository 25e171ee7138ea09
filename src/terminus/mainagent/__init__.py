"""The main-agent harness: a coding agent with or without the `execution_subagent` tool, counting its tokens."""
