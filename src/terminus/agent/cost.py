"""What an episode costs: model calls, commands, tokens in and out, and dollars where the model's price is known
(`configs/prices.yaml`, or prices given), and the budget check the loop makes before each model call."""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

import yaml

from terminus.config import ROOT
from terminus.errors import TerminusError

PRICES = ROOT / "configs" / "prices.yaml"


class PriceError(TerminusError, ValueError):
    """A price table that cannot be read, or a budget in dollars without a price."""


@dataclass(frozen=True)
class Price:
    input: float  # dollars per million tokens
    output: float
    source: str  # where the price came from, for the cost line

    def dollars(self, tokens_in: int, tokens_out: int) -> float:
        return (tokens_in * self.input + tokens_out * self.output) / 1e6


def load_prices(path: Path = PRICES) -> tuple[str, dict[str, tuple[float, float]]]:
    """(as_of, model -> (input, output) dollars per million tokens)."""
    try:
        raw = yaml.safe_load(Path(path).read_text()) or {}
        models = {str(name): (float(p["input"]), float(p["output"])) for name, p in (raw.get("models") or {}).items()}
    except (OSError, yaml.YAMLError, KeyError, TypeError, ValueError, AttributeError) as err:
        raise PriceError(f"cannot read the price table {path}: {err} (layout: configs/prices.yaml)") from None
    return str(raw.get("as_of", "undated")), models


def find_price(model: str | None, path: Path = PRICES) -> Price | None:
    """The model's price: its exact name, else the longest listed name its name starts with; None when unlisted."""
    if not model:
        return None
    as_of, models = load_prices(path)
    name = Path(model).name if "/" in model and model not in models else model  # a hub id: its last part
    match = name if name in models else max((m for m in models if name.startswith(m)), key=len, default=None)
    if match is None:
        return None
    return Price(*models[match], source=f"{match} as listed on {as_of} ({Path(path).name})")


def budget_note(traj, max_tokens: int | None, max_cost: float | None, price: tuple[float, float] | None) -> str | None:
    """A note for the main agent when the episode has spent its budget, else None."""
    tokens = traj.prompt_tokens + traj.completion_tokens
    if max_tokens is not None and tokens >= max_tokens:
        return f"The subagent stopped at its token budget: {tokens:,} model tokens used of {max_tokens:,}."
    if max_cost is not None and price is not None:
        spent = Price(*price, source="").dollars(traj.prompt_tokens, traj.completion_tokens)
        if spent >= max_cost:
            return f"The subagent stopped at its cost budget: ${spent:.4f} spent of ${max_cost:.4f}."
    return None


# Hosts that are this machine: an endpoint there serves a local model (`terminus serve`, a vLLM or llama.cpp server
# of one's own), whose tokens cost no dollars.
LOOPBACK_HOSTS = ("localhost", "localhost.localdomain", "ip6-localhost", "ip6-loopback")


def local_endpoint(base_url: str | None) -> bool:
    """True when `base_url` names this machine: `localhost`, or a loopback address (127.0.0.0/8, ::1). A model
    served there is priced at $0, unless a price is given or the price table lists its name (a local proxy to a
    paid API serves a listed name). Any other host, a LAN server included, has no price unless listed or given."""
    if not base_url:
        return False
    host = (urlsplit(base_url if "//" in base_url else f"//{base_url}").hostname or "").lower()
    if host in LOOPBACK_HOSTS:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def cost_summary(traj, price: Price | None, local_model: bool, calls_model: bool = True) -> dict:
    """Model calls, commands, tokens in and out, and dollars (None where the price is unknown). A policy that calls
    no model (`calls_model=False`: the scripted expert) makes no model calls and costs $0."""
    free = local_model or not calls_model
    dollars = price.dollars(traj.prompt_tokens, traj.completion_tokens) if price else (0.0 if free else None)
    source = "a local model" if local_model else "no model: the scripted expert" if not calls_model else None
    return {
        "model_calls": sum(1 for m in traj.messages if m.get("role") == "assistant") if calls_model else 0,
        "commands": len(traj.turns),
        "tokens_in": traj.prompt_tokens,
        "tokens_out": traj.completion_tokens,
        "dollars": None if dollars is None else round(dollars, 6),
        "price": price.source if price else source,
    }


def cost_line(summary: dict) -> str:
    """`cost: 4 model calls, 3 commands, 12,345 tokens in, 678 out, $0.0456 (...)`."""
    calls, commands = summary["model_calls"], summary["commands"]
    parts = [f"{calls} model call{'s' * (calls != 1)}", f"{commands} command{'s' * (commands != 1)}"]
    parts.append(f"{summary['tokens_in']:,} tokens in, {summary['tokens_out']:,} out")
    if summary["dollars"] is not None:
        parts.append(f"${summary['dollars']:.4f} ({summary['price']})")
    elif summary["tokens_in"] or summary["tokens_out"]:
        parts.append("dollars unknown: no price for this model (--price-in/--price-out, or configs/prices.yaml)")
    return "cost: " + ", ".join(parts)
