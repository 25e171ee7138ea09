"""Policies behind one protocol: `respond(messages, tools, tool_choice=None) -> assistant message`
(`terminus.agent.loop.Policy`)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

from terminus.agent.template import CHAT_TEMPLATE, ENABLE_THINKING
from terminus.errors import TerminusError
from terminus.models.local import TransformersPolicy, VLLMPolicy
from terminus.models.openai_compat import OpenAIPolicy
from terminus.models.scripted import ScriptedPolicy
from terminus.models.serve import vllm_server
from terminus.runspec import POLICIES


class PolicyChoiceError(TerminusError, ValueError):
    """A policy that is not one of POLICIES, or one that needs a model and was given none."""


def make_policy(name: str, model: str | None = None, base_url: str | None = None, **options):
    """Build a policy by name. `model` is a hub id or folder (transformers, vllm) or a served model (openai)."""
    if name == "scripted":
        return ScriptedPolicy()
    if name not in POLICIES:
        raise PolicyChoiceError(f"unknown policy {name!r}; choose one of {', '.join(POLICIES)}")
    if not model:
        raise PolicyChoiceError(f"policy {name!r} needs --model (a hub id, a model folder or a served model name)")
    if name == "openai":
        return OpenAIPolicy(model, base_url=base_url, **options)
    if name == "transformers":
        return TransformersPolicy(model, **options)

    return VLLMPolicy(model, **options)


@contextlib.contextmanager
def shared_policy(
    name: str,
    model: str | None = None,
    base_url: str | None = None,
    *,
    served_name: str | None = None,
    log_dir: Path | None = None,
    max_new_tokens: int = 512,
    max_model_len: int | None = None,
    enable_thinking: bool | None = None,
    gpu_memory_utilization: float | None = None,
    temperature: float = 0.0,
    seed: int | None = None,
    **options,
) -> Iterator:
    """A policy that many episodes share at once, made once for a stage or a grid cell. `vllm` is served by vLLM's
    OpenAI-compatible server for the block's lifetime (episodes call it concurrently; its continuous batching does
    the work; stopped by PID at the end), since one in-process engine cannot serve threads; `gpu_memory_utilization`
    is its share of the GPU (None: vLLM's default). `transformers` is loaded once and generates under a lock; the
    others are made as `make_policy` makes them. `enable_thinking` (local models) None is
    `terminus.agent.template.ENABLE_THINKING`. `temperature` and `seed`: sampling (0: greedy; the seed makes a
    sampled run repeatable and another seed another run; endpoints get it as the request's `seed`)."""

    thinking = ENABLE_THINKING if enable_thinking is None else enable_thinking
    if name != "vllm":
        if name == "transformers":
            options["max_new_tokens"] = max_new_tokens
            options["enable_thinking"] = thinking
        if name in ("transformers", "openai"):
            options |= {"temperature": temperature, "seed": seed}
        yield make_policy(name, model=model, base_url=base_url, **options)
        return
    if not model:
        raise PolicyChoiceError("policy 'vllm' needs --model (a hub id or a model folder)")

    served_name = served_name or Path(model).name
    log = Path(log_dir) / f"vllm-{served_name}.log" if log_dir else None

    # a subagent (a hub base model too) renders with the template it is trained with, thinking as set there
    with vllm_server(
        model,
        served_name=served_name,
        log=log,
        max_model_len=max_model_len,
        chat_template=CHAT_TEMPLATE,
        chat_kwargs={"enable_thinking": thinking},
        gpu_memory_utilization=gpu_memory_utilization,
    ) as url:
        yield OpenAIPolicy(served_name, base_url=url, max_tokens=max_new_tokens, temperature=temperature, seed=seed)
