"""The Execution Subagent: its terminal tool (and, with the subagent issue, the loop and prompts)."""
