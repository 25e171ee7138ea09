"""Batched generation behind one interface: `generate(conversations, tools) -> assistant messages`.

`conversations[i]` is rendered with its own `tools[i]` (a turn may offer the terminal or, on the last turn, nothing)
and answered with one assistant message: `content`, `usage`, the generated `token_ids`, and `logprobs` where the
backend gives them. Two implementations, which the GRPO recipe selects through `use_vllm`:

- `TransformersGenerator`: one left-padded `model.generate` call for the whole batch (CPU, small runs, and the
  reference: under greedy decoding a batch gives the tokens that one-at-a-time generation gives);
- `TRLVLLMGenerator`: the vLLM engine that TRL's GRPOTrainer owns when `use_vllm` is set (colocate or server
  mode), holding the weights TRL syncs at every step; it returns vLLM's logprobs of the sampled tokens.
"""

from __future__ import annotations

import threading
from typing import Protocol

from terminus.timing import model_view


class Generator(Protocol):
    name: str

    def generate(self, conversations: list[list[dict]], tools: list[list[dict]]) -> list[dict]: ...


def encode(tokenizer, conversation: list[dict], tools: list[dict] | None) -> list[int]:
    """The prompt's token ids, exactly as the chat template renders them for generation (timing text normalised)."""
    rendered = tokenizer.apply_chat_template(
        model_view(conversation), tools=tools or None, add_generation_prompt=True, tokenize=True, return_dict=True
    )
    return list(rendered["input_ids"])


def eos_ids(model, tokenizer) -> set[int]:
    eos = getattr(getattr(model, "generation_config", None), "eos_token_id", None)
    if eos is None:
        eos = tokenizer.eos_token_id
    return set(eos if isinstance(eos, list | tuple) else [eos])


class TransformersGenerator:
    """Left-padded batched `generate`. Generators of one model share its lock: threads share a model, one
    generation at a time."""

    def __init__(
        self,
        model,
        tokenizer,
        max_new_tokens: int = 512,
        temperature: float = 0.0,
        name: str = "",
        lock: threading.Lock | None = None,
    ) -> None:
        self.model, self.tokenizer = model, tokenizer
        self.max_new_tokens, self.temperature = max_new_tokens, temperature
        self.name = name or f"transformers:{getattr(model, 'name_or_path', 'model')}"
        self.lock = lock or threading.Lock()
        self.eos = eos_ids(model, tokenizer)
        self.pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else min(self.eos)

    def generate(self, conversations: list[list[dict]], tools: list[list[dict]]) -> list[dict]:
        import torch

        prompts = [encode(self.tokenizer, c, t) for c, t in zip(conversations, tools, strict=True)]
        width = max(len(p) for p in prompts)
        device = next(self.model.parameters()).device
        input_ids = torch.tensor([[self.pad] * (width - len(p)) + p for p in prompts], device=device)
        attention = torch.tensor([[0] * (width - len(p)) + [1] * len(p) for p in prompts], device=device)
        sampling = (
            {"do_sample": True, "temperature": self.temperature} if self.temperature > 0 else {"do_sample": False}
        )
        with self.lock, torch.no_grad():
            output = self.model.generate(
                input_ids=input_ids,
                attention_mask=attention,
                max_new_tokens=self.max_new_tokens,
                pad_token_id=self.pad,
                **sampling,
            )
        replies = []
        for row, prompt in zip(output[:, width:].tolist(), prompts, strict=True):
            # A row that ended early is padded to the longest; keep it up to and including its end token.
            end = next((k + 1 for k, token in enumerate(row) if token in self.eos), len(row))
            ids = row[:end]
            replies.append(
                {
                    "content": self.tokenizer.decode(ids, skip_special_tokens=True),
                    "usage": {"prompt_tokens": len(prompt), "completion_tokens": len(ids)},
                    "token_ids": ids,
                }
            )
        return replies


class TRLVLLMGenerator:
    """Generation through `trainer.vllm_generation`: the engine TRL created for `use_vllm` (colocate or server mode),
    whose weights TRL syncs before each rollout. The turn budget replaces the episode's `max_completion_length` for
    the call; the sampling settings (temperature, top_p, ...) are the recipe's."""

    def __init__(self, trainer, max_new_tokens: int) -> None:
        self.vllm = trainer.vllm_generation
        self.tokenizer = trainer.processing_class
        self.max_new_tokens = max_new_tokens
        self.name = f"trl-vllm:{trainer.vllm_generation.mode}"

    def generate(self, conversations: list[list[dict]], tools: list[list[dict]]) -> list[dict]:
        prompts = [encode(self.tokenizer, c, t) for c, t in zip(conversations, tools, strict=True)]
        episode_budget = self.vllm.max_completion_length
        self.vllm.max_completion_length = self.max_new_tokens
        try:
            _, completions, logprobs, _ = self.vllm.generate(prompts=prompts, images=None, num_generations=1)
        finally:
            self.vllm.max_completion_length = episode_budget
        replies = []
        for i, (prompt, ids) in enumerate(zip(prompts, completions, strict=True)):
            ids = list(ids)
            reply = {
                "content": self.tokenizer.decode(ids, skip_special_tokens=True),
                "usage": {"prompt_tokens": len(prompt), "completion_tokens": len(ids)},
                "token_ids": ids,
            }
            if logprobs is not None:
                reply["logprobs"] = [lp[0] if lp else None for lp in logprobs[i]]
            replies.append(reply)
        return replies
