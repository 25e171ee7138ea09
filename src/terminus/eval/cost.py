"""What an eval episode costs in dollars (`cost_usd`), from what it spent:

- the main agent's tokens at its model's prices (configs/prices.yaml: input, cached input, output per million
  tokens), split into uncached prompt tokens, prompt tokens read from the provider's cache, and output tokens; a
  main agent with no model of its own (reader, replay) is billed as `price_as` names (the smoke config: the paper's
  main agent), else its cost is unknown (None);
- an endpoint subagent's (or context model's) tokens at its prices, uncached;
- a local model's time (a transformers or vLLM subagent, a local summarizer) at `eval.gpu_hour_usd` per hour, as if
  one GPU served one episode at a time (an upper bound for a served model batching many). GPU time is wall-clock
  time: it varies between runs and machines as `wall_s` does, so its dollars are kept apart (`gpu_cost_usd`) from
  the token dollars (`token_cost_usd`), which the same episode always repeats.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import yaml

from terminus.agent.cost import PRICES, find_price
from terminus.runspec import LOCAL_POLICIES

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class TokenPrice:
    input: float  # dollars per million tokens
    cache_read: float
    output: float

    def dollars(self, uncached: int, cache_read: int, output: int) -> float:
        return (uncached * self.input + cache_read * self.cache_read + output * self.output) / 1e6


@lru_cache(maxsize=32)
def token_price(model: str | None, path: Path = PRICES) -> TokenPrice | None:
    """The model's prices (find_price's match); cached input at `cache_read` where listed, else the input price."""
    price = find_price(model, path)
    if price is None:
        if model:
            log.warning("no price for %s in %s: its dollars are unknown (cost_usd empty)", model, path)
        return None
    listed = (yaml.safe_load(Path(path).read_text()) or {}).get("models") or {}
    match = price.source.split(" as listed", 1)[0]
    cache = (listed.get(match) or {}).get("cache_read", price.input)
    return TokenPrice(price.input, float(cache), price.output)


@dataclass(frozen=True)
class CellPrices:
    """A cell's prices: the main agent's, the subagent's and the context model's (None: local, free or unknown)."""

    main: TokenPrice | None
    main_known: bool  # False: a main agent with no price (its dollars are unknown)
    sub: TokenPrice | None
    sub_local: bool
    sub_known: bool
    context: TokenPrice | None
    context_local: bool
    gpu_hour_usd: float

    @classmethod
    def of(cls, main: dict, sub: dict, context: dict | None, gpu_hour_usd: float) -> CellPrices:
        main_name = main.get("price_as") or (main.get("model") if main["kind"] == "llm" else None)
        main_price = token_price(main_name)
        sub_price = token_price(sub.get("price_as") or sub.get("model")) if sub["policy"] == "openai" else None
        model = (context or {}).get("model") or {}
        ctx_price = (
            token_price(model.get("price_as") or model.get("model")) if model.get("policy") == "openai" else None
        )
        return cls(
            main=main_price,
            main_known=main_price is not None,
            sub=sub_price,
            sub_local=sub["policy"] in LOCAL_POLICIES,
            sub_known=sub["policy"] != "openai" or sub_price is not None,
            context=ctx_price,
            context_local=model.get("policy") in LOCAL_POLICIES,
            gpu_hour_usd=gpu_hour_usd,
        )

    def episode(
        self, *, main: tuple[int, int, int] | None, sub: tuple[int, int], sub_s: float, ctx: dict | None = None
    ) -> dict:
        """`main`: (uncached, cache read, output) tokens, None without a main agent (execution cells); `sub`:
        (prompt, completion) tokens; `sub_s`: subagent time; `ctx`: the context policy's stats. The cost fields of
        the episode's record; the dollars are None where a price is unknown."""
        ctx = ctx or {}
        tokens = 0.0
        ctx_known = self.context is not None or self.context_local or not ctx.get("prompt_tokens")
        known = (main is None or self.main_known) and self.sub_known and ctx_known
        if self.main and main is not None:
            tokens += self.main.dollars(*main)
        if self.sub:
            tokens += self.sub.dollars(sub[0], 0, sub[1])
        if self.context:
            tokens += self.context.dollars(ctx.get("prompt_tokens", 0), 0, ctx.get("completion_tokens", 0))
        gpu_s = (sub_s if self.sub_local else 0.0) + (float(ctx.get("model_s", 0.0)) if self.context_local else 0.0)
        gpu = gpu_s / 3600 * self.gpu_hour_usd
        return {
            "token_cost_usd": round(tokens, 6) if known else None,
            "gpu_s": round(gpu_s, 3),
            "gpu_cost_usd": round(gpu, 6),
            "cost_usd": round(tokens + gpu, 6) if known else None,
        }
