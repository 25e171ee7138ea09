"""The evaluation grid: main agent x subagent x benchmark x seed, resumable, with bootstrap intervals."""
