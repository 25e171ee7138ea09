"""terminus: a small model as the Execution Subagent of a coding agent."""

__version__ = "0.1.0"
