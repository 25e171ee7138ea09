"""Batched generation behind one interface: `generate(conversations, tools) -> assistant messages`.

`conversations[i]` is rendered with its own `tools[i]` (the subagent loop offers the terminal on every turn, the last
too: `agent.loop.ANSWER_NOW`) and answered with one assistant message: `content`, `usage`, the generated
`token_ids`, and `logprobs` where the backend gives them. Two implementations, which the GRPO recipe selects
through `use_vllm`:

- `TransformersGenerator`: one left-padded `model.generate` call for the whole batch (CPU, small runs, and the
  reference: under greedy decoding a batch gives the tokens that one-at-a-time generation gives);
- `TRLVLLMGenerator`: the vLLM engine that TRL's GRPOTrainer owns when `use_vllm` is set (colocate or server
  mode), holding the weights TRL syncs at every step; it returns vLLM's logprobs of the sampled tokens.
"""

from __future__ import annotations

import hashlib
import json
import threading
from typing import Protocol

from terminus.agent.template import CHAT_KWARGS, TemplateError, describe
from terminus.errors import TerminusError
from terminus.timing import model_view


class Generator(Protocol):
    name: str

    def generate(
        self, conversations: list[list[dict]], tools: list[list[dict]], prompts: list[list[int]] | None = None
    ) -> list[dict]:
        """`prompts`, when given, are the token ids to generate from (`EpisodeTokens`), else the conversations
        are rendered with the chat template."""
        ...


def encode(
    tokenizer, conversation: list[dict], tools: list[dict] | None, chat_kwargs: dict | None = None
) -> list[int]:
    """The prompt's token ids, exactly as the chat template renders them for generation (timing text normalised;
    thinking as `terminus.agent.template` sets it unless `chat_kwargs` says otherwise)."""
    rendered = tokenizer.apply_chat_template(
        model_view(conversation),
        tools=tools or None,
        add_generation_prompt=True,
        tokenize=True,
        return_dict=True,
        **{**CHAT_KWARGS, **(chat_kwargs or {})},
    )
    return list(rendered["input_ids"])


def encode_all(tokenizer, conversations: list[list[dict]], tools: list[list[dict]], chat_kwargs) -> list[list[int]]:
    """Each conversation's prompt ids (`encode`), for a generator called without the episodes' own ids."""
    return [encode(tokenizer, c, t, chat_kwargs) for c, t in zip(conversations, tools, strict=True)]


def eos_ids(model, tokenizer) -> set[int]:
    eos = getattr(getattr(model, "generation_config", None), "eos_token_id", None)
    if eos is None:
        eos = tokenizer.eos_token_id
    return set(eos if isinstance(eos, list | tuple) else [eos])


def call_seed(seed: int, prompts: list[list[int]]) -> int:
    """A 63-bit seed for one generate call: the run's seed and the token ids it is asked to continue."""
    digest = hashlib.sha256(json.dumps([seed, prompts]).encode()).digest()
    return int.from_bytes(digest[:8], "big") >> 1


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
        chat_kwargs: dict | None = None,
        seed: int | None = None,
    ) -> None:
        self.model, self.tokenizer = model, tokenizer
        self.seed = seed  # sampling seed (temperature > 0): each call's draw is fixed by it and the prompts
        self.chat_kwargs = chat_kwargs  # over terminus.agent.template.CHAT_KWARGS (thinking off)
        self.max_new_tokens, self.temperature = max_new_tokens, temperature
        self.name = name or f"transformers:{getattr(model, 'name_or_path', 'model')}"
        self.lock = lock or threading.Lock()
        self.eos = eos_ids(model, tokenizer)
        self.pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else min(self.eos)
        self.max_model_len = getattr(getattr(model, "config", None), "max_position_embeddings", None)

    def generate(
        self, conversations: list[list[dict]], tools: list[list[dict]], prompts: list[list[int]] | None = None
    ) -> list[dict]:
        import torch

        prompts = (
            prompts if prompts is not None else encode_all(self.tokenizer, conversations, tools, self.chat_kwargs)
        )
        width = max(len(p) for p in prompts)
        device = next(self.model.parameters()).device
        input_ids = torch.tensor([[self.pad] * (width - len(p)) + p for p in prompts], device=device)
        attention = torch.tensor([[0] * (width - len(p)) + [1] * len(p) for p in prompts], device=device)
        # Sampling is from the model's distribution at the temperature, nothing else: generate's default top_k=50
        # would make rollouts off-policy for the log-probabilities GRPO computes (TRL's vLLM path uses no top-k).
        sampling = (
            {"do_sample": True, "temperature": self.temperature, "top_k": 0, "top_p": 1.0}
            if self.temperature > 0
            else {"do_sample": False}
        )
        with self.lock, torch.no_grad():
            if self.temperature > 0 and self.seed is not None:
                # Seeded per call from the seed and the prompts, under the lock: the same episode draws the same
                # tokens whatever other threads sample in between, and another seed draws others.
                torch.manual_seed(call_seed(self.seed, prompts))
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
        self.chat_kwargs = trainer.chat_template_kwargs  # the recipe's (enable_thinking)
        # the engine's context (vllm_max_model_length, else the model's): a longer prompt fails the whole call
        self.max_model_len = trainer.args.vllm_max_model_length or trainer.model.config.max_position_embeddings

    def generate(
        self, conversations: list[list[dict]], tools: list[list[dict]], prompts: list[list[int]] | None = None
    ) -> list[dict]:
        prompts = (
            prompts if prompts is not None else encode_all(self.tokenizer, conversations, tools, self.chat_kwargs)
        )
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


class PromptTooLong(TerminusError, ValueError):
    """An episode's next prompt does not fit the engine's context: that episode ends (a crash), its batch goes on."""


class EpisodeTokens:
    """One episode as the single token sequence it was generated as (token in, token out, as multi-turn RL
    frameworks keep it): the first prompt as the template renders it, then each reply's sampled token ids as the
    generator returned them (mask 1, with their logprobs), and between replies only the tokens of what came after
    each (the end of the turn, tool output, injected messages, the next generation prompt; mask 0). Every prompt
    after the first is this sequence so far plus those tokens, so the model is trained on exactly the tokens it
    sampled, in exactly the context it sampled them in: nothing is re-rendered from text (Qwen3's template would
    drop reasoning, a reply cut at the token limit would gain an `<|im_end|>` it never sampled, and byte-level BPE
    may tokenise a sampled text otherwise).

    The template must be prefix-preserving (the conversation through a reply renders as a prefix of the next
    prompt), as `configs/agent/chat_template.jinja` is; and the tools block stays the first prompt's for the whole
    episode (the loop sends the tools on every turn and withdraws the terminal on the last and forced turns by
    running no call there, as SFT trains final answers with the tools block in context), so the episode stays one
    sequence.

    `must_answer` tells the loop to ask for the final answer now when the budget (`max_completion_length` after the
    first prompt, and the engine's `max_model_len`) could not hold this reply, a tool output of up to
    `observation_tokens` and a final reply after it: the judged answer is not cut off. A longer tool output can
    still overflow; the episode is then cut and counted as truncated.
    """

    def __init__(
        self,
        tokenizer,
        *,
        max_new_tokens: int,
        max_completion_length: int | None = None,
        max_model_len: int | None = None,
        observation_tokens: int = 2500,
        chat_kwargs: dict | None = None,
    ) -> None:
        self.tokenizer = tokenizer
        self.chat_kwargs = {**CHAT_KWARGS, **(chat_kwargs or {})}
        self.max_new_tokens, self.observation_tokens = max_new_tokens, observation_tokens
        self.max_completion_length, self.max_model_len = max_completion_length, max_model_len
        self.eos_text = tokenizer.eos_token
        self.eos = {tokenizer.eos_token_id}
        self.ids: list[int] = []
        self.mask: list[int] = []
        self.logprobs: list[float | None] = []
        self.prompt_len = 0
        self.tools: list[dict] | None = None
        self.replies = 0

    def _render(self, messages: list[dict], generation: bool) -> str:
        return self.tokenizer.apply_chat_template(
            model_view(messages),
            tools=self.tools or None,
            add_generation_prompt=generation,
            tokenize=False,
            **self.chat_kwargs,
        )

    def _after_last_reply(self, messages: list[dict]) -> list[int]:
        """The tokens between the last reply's sampled tokens and the next reply: the end of its turn as the template
        closes it, then everything the conversation added, up to the generation prompt."""
        last = max(i for i, m in enumerate(messages) if m["role"] == "assistant")
        before, after = self._render(messages[: last + 1], False), self._render(messages, True)
        if not after.startswith(before) or self.eos_text not in before:
            raise TemplateError(
                f"{describe(self.tokenizer)} does not render the conversation through a reply as a prefix of the "
                "next prompt: the episode cannot be trained on the tokens it sampled"
            )
        closing = before.rsplit(self.eos_text, 1)[1]  # what the template puts after <|im_end|> ("\n")
        finished = bool(self.ids) and self.ids[-1] in self.eos
        text = ("" if finished else self.eos_text) + closing + after[len(before) :]
        return list(self.tokenizer(text, add_special_tokens=False)["input_ids"])

    def _limit(self) -> int | None:
        limits = [n for n in (self.max_model_len,) if n]
        if self.max_completion_length and self.prompt_len:
            limits.append(self.prompt_len + self.max_completion_length)
        return min(limits) if limits else None

    def prompt(self, messages: list[dict], tools: list[dict]) -> list[int]:
        """The token ids to generate the next reply from; raises PromptTooLong when they fill the engine's context."""
        if not self.replies:
            self.tools = tools
            self.ids = encode(self.tokenizer, messages, tools, self.chat_kwargs)
            self.mask, self.logprobs, self.prompt_len = [0] * len(self.ids), [None] * len(self.ids), len(self.ids)
        else:
            delta = self._after_last_reply(messages)
            self.ids += delta
            self.mask += [0] * len(delta)
            self.logprobs += [None] * len(delta)
        if self.max_model_len and len(self.ids) >= self.max_model_len:
            raise PromptTooLong(
                f"the prompt of turn {self.replies + 1} has {len(self.ids)} tokens, max_model_len is "
                f"{self.max_model_len}: this episode ends here"
            )
        return list(self.ids)

    def reply(self, token_ids: list[int], logprobs: list[float | None] | None) -> None:
        self.ids += list(token_ids)
        self.mask += [1] * len(token_ids)
        self.logprobs += list(logprobs) if logprobs is not None else [None] * len(token_ids)
        self.replies += 1

    def must_answer(self, messages: list[dict]) -> bool:
        """True when the turn about to start must be the last (see the class)."""
        limit = self._limit()
        if limit is None or not self.replies:
            return False
        pending = len(self._after_last_reply(messages)) + 64  # the tool output so far, the "answer now" message
        needed = self.max_new_tokens + self.observation_tokens + 64 + self.max_new_tokens
        return len(self.ids) + pending + needed > limit

    def sample(self, max_completion_length: int | None) -> dict:
        """TRL's rollout fields for this episode, cut to `max_completion_length`; `truncated` when it does not end
        on a sampled end of turn (a cut reply, a cut episode, or one that ended before its next reply)."""
        completion = self.ids[self.prompt_len :]
        mask, logprobs = self.mask[self.prompt_len :], self.logprobs[self.prompt_len :]
        if max_completion_length is not None and len(completion) > max_completion_length:
            keep = max_completion_length
            if completion[keep - 1] in self.eos:  # cut right after an end of turn: still not a finished episode
                keep -= 1
            completion, mask, logprobs = completion[:keep], mask[:keep], logprobs[:keep]
        if not completion:  # an episode with nothing after the prompt still needs one token
            completion, mask, logprobs = [self.tokenizer.pad_token_id], [0], [None]
        return {
            "prompt_ids": self.ids[: self.prompt_len],
            "completion_ids": completion,
            "env_mask": mask,
            "logprobs": logprobs,
            "truncated": completion[-1] not in self.eos,
        }
