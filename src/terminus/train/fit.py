"""SFT conversations that fit the recipe's `max_length` without losing their end.

TRL's SFTTrainer cuts a tokenized conversation longer than `max_length` keeping its start (`truncation_mode`
keep_start): the cut falls on the end, and the end is the final answer, the reply the subagent exists to give. So
`terminus sft-data` measures every conversation as training tokenizes it (`data.sft_tokens`: the recipe's tokenizer
with the project's chat template) and shortens one over the limit before training: its tool outputs (the middle
observations; assistant turns are never touched), longest first, keep their head and tail around a marker like the
one the terminal writes, until it fits. One still over the limit with every output at `FLOOR_CHARS` is dropped.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from terminus.agent.template import install
from terminus.config import load_yaml, resolve_model
from terminus.train import TrainingInputError

FLOOR_CHARS = 400
"""An output is never shortened below this (head and tail of ~200 characters: the command's start and its status)."""


def elided(text: str, keep: int) -> str:
    """`text` in about `keep` characters: whole lines from its head and its tail around a marker in the terminal's
    own words (`sandbox.output`); characters where a line is too long to keep whole. Always shorter than `text`
    when `text` is longer than `keep`."""
    if len(text) <= keep:
        return text
    lines = text.split("\n")
    head, tail, used = 0, 0, 0
    while head + tail < len(lines) - 1:  # alternate head and tail lines while both halves fit their share
        take_head = head <= tail
        line = lines[head] if take_head else lines[len(lines) - 1 - tail]
        if used + len(line) + 1 > keep:
            break
        used += len(line) + 1
        head, tail = (head + 1, tail) if take_head else (head, tail + 1)
    if head and tail:
        gone = len(lines) - head - tail
        note = f"[... {gone} line{'s' if gone != 1 else ''} of output elided ...]"
        return "\n".join([*lines[:head], note, *lines[len(lines) - tail :]])
    half = max(keep // 2, 1)
    return f"{text[:half]}\n[... {len(text) - 2 * half} characters of output elided ...]\n{text[-half:]}"


@dataclass
class LengthReport:
    """counts.json's `length`: the limit, and how many conversations (copies included) were over it as tokenized,
    fit after their tool outputs were shortened, or were dropped; the longest as tokenized."""

    max_length: int
    over: int = 0
    shortened: int = 0
    dropped: int = 0
    longest: int = 0
    dropped_ids: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        return {k: getattr(self, k) for k in ("max_length", "over", "shortened", "dropped", "longest")}


def sft_tokens(tokenizer, row: dict) -> dict:
    """A row tokenized as TRL's SFTTrainer tokenizes it (`tokenize_fn`, language-modelling case: the messages with
    the row's tools, assistant masks from the template's generation markers; no chat_template_kwargs, as the rows
    carry none): `input_ids` and `assistant_masks`."""
    out = tokenizer.apply_chat_template(
        row["messages"], tools=row["tools"], tokenize=True, return_dict=True, return_assistant_tokens_mask=True
    )
    return {"input_ids": list(out["input_ids"]), "assistant_masks": list(out["assistant_masks"])}


def fit(tokenizer, row: dict, max_length: int, report: LengthReport) -> dict | None:
    """`row` as it fits `max_length` tokens as training tokenizes it (`sft_tokens`), or None when it cannot;
    `report` counts it."""

    def length(messages: list[dict]) -> int:
        return len(sft_tokens(tokenizer, {**row, "messages": messages})["input_ids"])

    messages = row["messages"]
    n = length(messages)
    report.longest = max(report.longest, n)
    if n <= max_length:
        return row
    report.over += 1
    messages = [dict(m) for m in messages]
    floored: set[int] = set()  # outputs that cannot be cut further
    while n > max_length:
        tools = [
            i
            for i, m in enumerate(messages)
            if m["role"] == "tool" and len(m["content"]) > FLOOR_CHARS and i not in floored
        ]
        if not tools:
            report.dropped += 1
            report.dropped_ids.append(row["id"])
            return None
        i = max(tools, key=lambda k: (len(messages[k]["content"]), -k))  # the longest; the earliest of equals
        text = messages[i]["content"]
        # characters per token of this output, to cut about the excess in one go (a little more: the marker)
        chars_per_token = len(text) / max(len(tokenizer(text, add_special_tokens=False)["input_ids"]), 1)
        keep = max(FLOOR_CHARS, int(len(text) - (n - max_length) * chars_per_token * 1.1) - 64)
        shorter = elided(text, keep)
        if len(shorter) >= len(text) or keep == FLOOR_CHARS:
            floored.add(i)
        if len(shorter) < len(text):
            messages[i] = {**messages[i], "content": shorter}
            n = length(messages)
    report.shortened += 1
    return {**row, "messages": messages}


def recipe_length(recipe: Path, model: str | None = None) -> tuple[object, int]:
    """The SFT recipe's tokenizer (its `model_name_or_path`, or `model` as `terminus sft --model-name-or-path`
    overrides it, with the project's chat template installed as `terminus sft` installs it) and its `max_length`:
    the recipe is the one home of the limit, so that the data is cut to what training keeps."""
    from transformers import AutoTokenizer

    spec = load_yaml(recipe, "SFT recipe")
    max_length = spec.get("max_length") if isinstance(spec, dict) else None
    if isinstance(max_length, bool) or not isinstance(max_length, int) or max_length <= 0:
        raise TrainingInputError(f"SFT recipe {recipe} has no max_length (a positive number of tokens)")
    name = model or spec.get("model_name_or_path")
    if not name:
        raise TrainingInputError(f"SFT recipe {recipe} names no model_name_or_path (or pass --model)")
    return install(AutoTokenizer.from_pretrained(resolve_model(name))), max_length
