"""Policies behind one protocol: `respond(messages, tools) -> assistant message`."""

from __future__ import annotations

POLICIES = ("scripted", "openai", "transformers", "vllm")


def make_policy(name: str, **options):
    if name == "scripted":
        from terminus.models.scripted import ScriptedPolicy

        return ScriptedPolicy()
    if name in POLICIES:
        raise NotImplementedError(f"policy {name!r} is not implemented yet; use --policy scripted")
    raise ValueError(f"unknown policy {name!r}; choose one of {', '.join(POLICIES)}")
