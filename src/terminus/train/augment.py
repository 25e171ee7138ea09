"""Augmentation by consistent renaming: a training conversation again, with the synthetic projects' domain and
function names replaced by fresh ones everywhere at once (query, commands, tool output, final answer).

The synthetic corpus draws its names from a short list (`tasks.synthetic.spec.DOMAINS`), so a small model can
score on held-out repositories by recalling names it saw rather than reading them off the output. A renamed copy
keeps every fact's relation to the output (the failing test is still the one the output names) while breaking
the names' link to memory: what is left to learn is to copy. Counts and paths' shapes are left as they are.
"""

from __future__ import annotations

import random
import re

from terminus.tasks.synthetic.spec import DOMAINS

SYLLABLES = (
    "ba", "ko", "ri", "mu", "te", "la", "zo", "ni", "pe", "gu", "da", "vi", "so", "ha", "me", "fu", "ro", "ki",
    "lo", "ze", "na", "po", "xi", "ju", "we", "ta", "mi", "do", "ge", "sa",
)  # fmt: skip


def vocabulary() -> list[str]:
    """The snake_case names the synthetic generator uses for projects and functions."""

    words = set(DOMAINS)
    for functions, _packages in DOMAINS.values():
        words.update(name for name, _params, _expr in functions)
    return sorted(words)


def _camel(snake: str, upper: bool) -> str:
    parts = snake.split("_")
    head = parts[0].capitalize() if upper else parts[0]
    return head + "".join(p.capitalize() for p in parts[1:])


def fresh_names(words: list[str], rng: random.Random) -> dict[str, str]:
    """Each word -> a new word of as many parts, none equal to a known word or to each other."""
    taken = set(words)
    mapping = {}
    for word in words:
        while True:
            new = "_".join("".join(rng.choice(SYLLABLES) for _ in range(rng.randint(2, 3))) for _ in word.split("_"))
            if new not in taken:
                break
        taken.add(new)
        mapping[word] = new
    return mapping


class Renamer:
    """Replaces each word in its snake_case, CamelCase and camelCase forms, inside longer identifiers too
    (`test_billing_more`, `TestInvoiceTotalTypical`, `invoiceTotal`)."""

    def __init__(self, mapping: dict[str, str]) -> None:
        self.table: dict[str, str] = {}
        for old, new in mapping.items():
            self.table[old] = new
            self.table[_camel(old, True)] = _camel(new, True)
            if "_" in old:
                self.table[_camel(old, False)] = _camel(new, False)
        alternatives = "|".join(re.escape(w) for w in sorted(self.table, key=len, reverse=True))
        # not inside a longer lowercase word; a CamelCase part may follow a lowercase letter (TestBilling)
        self.pattern = re.compile(rf"(?:(?<![A-Za-z])|(?<=[a-z])(?=[A-Z]))({alternatives})(?![a-z])")

    def __call__(self, text: str) -> str:
        return self.pattern.sub(lambda m: self.table[m.group(1)], text)


def renamed_copies(messages: list[dict], copies: int, key: str) -> list[list[dict]]:
    """`copies` renamed versions of a conversation in `train.data.to_chat`'s form (content and tool-call
    arguments renamed; roles and structure untouched), each copy with its own names drawn from `key`."""
    words = vocabulary()
    out = []
    for k in range(copies):
        rename = Renamer(fresh_names(words, random.Random(f"{key}:{k}")))
        out.append(
            [
                {
                    **m,
                    "content": rename(m["content"]),
                    "tool_calls": [
                        {**c, "function": {**c["function"], "arguments": rename(c["function"]["arguments"])}}
                        for c in m["tool_calls"]
                    ]
                    if m.get("tool_calls")
                    else m.get("tool_calls"),
                }
                for m in messages
            ]
        )
    return out
