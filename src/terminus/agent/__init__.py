"""The Execution Subagent: its terminal tool, the turn loop, the prompts and the trajectory record."""
