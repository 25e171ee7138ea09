"""The one chat template every stage uses, at both scales: `configs/agent/chat_template.jinja` (Qwen3's own template
with TRL's training changes: prefix-preserving, `{% generation %}` markers). The tiny and the random-weights
models are built with it; SFT, GRPO and export install it on whatever tokenizer they load (Qwen/Qwen3-4B ships
Qwen3's original, which has no generation markers, so assistant masks would be all zero); local generation and
the vLLM server render with it.

Thinking is off at every stage (`ENABLE_THINKING`): the expert trajectories SFT learns from carry no reasoning, a
subagent's worth is in few tokens a turn (Qwen3's thinking would spend the 1,024-token turn budget before the
command), and the base model is evaluated as the trained ones are used, so the comparison is like for like.
"""

from __future__ import annotations

import hashlib
import logging

from terminus.config import ROOT
from terminus.errors import TerminusError

log = logging.getLogger(__name__)

CHAT_TEMPLATE = ROOT / "configs" / "agent" / "chat_template.jinja"
ENABLE_THINKING = False
"""Passed explicitly wherever a generation prompt is rendered (Qwen3 thinks unless told `enable_thinking=False`)."""
CHAT_KWARGS = {"enable_thinking": ENABLE_THINKING}


class TemplateError(TerminusError, ValueError):
    pass


def chat_template() -> str:
    return CHAT_TEMPLATE.read_text()


def template_sha256(text: str | None = None) -> str:
    return hashlib.sha256((text if text is not None else chat_template()).encode()).hexdigest()


def install(tokenizer):
    """Give `tokenizer` the project's template (in place; returned for chaining)."""
    text = chat_template()
    if tokenizer.chat_template != text:
        log.info("chat template of %s replaced by %s", getattr(tokenizer, "name_or_path", "tokenizer"), CHAT_TEMPLATE)
        tokenizer.chat_template = text
    return tokenizer


def describe(tokenizer) -> str:
    """Names a tokenizer's template in one error line: the project's file, or a sha256 prefix of another one."""
    text = tokenizer.chat_template if isinstance(tokenizer.chat_template, str) else str(tokenizer.chat_template)
    if text == chat_template():
        return f"{CHAT_TEMPLATE.relative_to(ROOT)}"
    return f"a chat template other than {CHAT_TEMPLATE.relative_to(ROOT)} (sha256 {template_sha256(text)[:12]})"
