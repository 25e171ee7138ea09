"""Running the subagent over tasks: validation by the scripted expert, teacher collection, resumable."""
