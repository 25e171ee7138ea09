"""Wall-clock text in tool output ("3 passed in 0.03s", "ok  pkg  0.002s", "Total Test time (real) = 0.01 sec")
differs between two runs of the same command, and so do the memory addresses in Python's reprs (`<Codec object at
0x7fa68608c050>`). A model that reads them, or trains on them, makes two runs of one seed differ. What a model reads
(`model_view`: generation prompts at every scale, SFT conversations, GRPO episodes, the tiny tokenizer's corpus)
therefore has every duration and address replaced by `?`; the trajectory keeps the raw output.
"""

from __future__ import annotations

import re

PLACEHOLDER = "?"
# A number directly followed by a unit of time: 0.03s, 12ms, 0.01 sec, 2 seconds, 1.5 µs ...
_DURATION = re.compile(r"(?<![\w.])\d+(?:\.\d+)?(?=\s?(?:ms|µs|us|ns|s|sec|secs|seconds?)(?![A-Za-z]))")
_MINUTES = re.compile(r"(?<![\w.])\d+m\d+(?:\.\d+)?(?=s(?![A-Za-z]))")  # `time`'s 0m0.003s
# ... a wall-clock reading (00:00:01.23, as dotnet and some loggers print), and node:test's `duration_ms 1.23`.
_CLOCK = re.compile(r"(?<![\w:.])\d{1,2}:\d{2}:\d{2}(?:\.\d+)?(?![\w:])")
_NAMED = re.compile(r"(\bduration_ms:?\s*)\d+(?:\.\d+)?")
_ADDRESS = re.compile(r"(\bat 0x)[0-9a-fA-F]{6,16}\b")  # <... object at 0x7fa68608c050>


def normalise_timing(text: str) -> str:
    """`text` with every duration's number and every object address replaced by the placeholder; counts, names
    and locations untouched."""
    text = _NAMED.sub(lambda m: m.group(1) + PLACEHOLDER, text)
    text = _ADDRESS.sub(lambda m: m.group(1) + PLACEHOLDER, text)
    text = _CLOCK.sub(PLACEHOLDER, text)
    text = _MINUTES.sub(PLACEHOLDER, text)
    return _DURATION.sub(PLACEHOLDER, text)


def model_view(messages: list[dict]) -> list[dict]:
    """The conversation as a model reads it: tool messages with their timing text normalised (copies; the
    input is not changed)."""
    return [
        {**m, "content": normalise_timing(m["content"])} if m.get("role") == "tool" and m.get("content") else m
        for m in messages
    ]
