"""Policies behind one protocol: `respond(messages, tools) -> assistant message`."""

from __future__ import annotations

POLICIES = ("scripted", "openai", "transformers", "vllm")


def make_policy(name: str, model: str | None = None, base_url: str | None = None, **options):
    """Build a policy by name. `model` is a hub id or folder (transformers, vllm) or a served model (openai)."""
    if name == "scripted":
        from terminus.models.scripted import ScriptedPolicy

        return ScriptedPolicy()
    if name not in POLICIES:
        raise ValueError(f"unknown policy {name!r}; choose one of {', '.join(POLICIES)}")
    if not model:
        raise ValueError(f"policy {name!r} needs --model (a hub id, a model folder or a served model name)")
    if name == "openai":
        from terminus.models.openai_compat import OpenAIPolicy

        return OpenAIPolicy(model, base_url=base_url, **options)
    if name == "transformers":
        from terminus.models.local import TransformersPolicy

        return TransformersPolicy(model, **options)
    from terminus.models.local import VLLMPolicy

    return VLLMPolicy(model, **options)
