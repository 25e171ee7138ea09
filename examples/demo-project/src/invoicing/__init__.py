"""A small invoicing library: the demo project the subagent works on."""
