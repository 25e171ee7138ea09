"""A Serilog-style side by side for one task: the main agent without the subagent and with it, under the full
context (the paper's setting), on the first seed. Beside the task with the largest saving (or the one asked for), the
task with the median saving (`median_gap`): the largest alone would show the best case as if it were typical."""

from __future__ import annotations

from terminus.errors import TerminusError
from terminus.mainagent.tokens import TokenCounter


class CaseStudyError(TerminusError, ValueError):
    """The records hold no pair of episodes the case study can compare."""


SYNTHETIC = "synthetic"


def _repair(records: list[dict], main_agent: str | None) -> dict[tuple[str, str], dict]:
    rows = [r for r in records if r["benchmark"] == "repair" and r.get("context", "full") == "full"]
    if rows:
        first = min(r["seed"] for r in rows)
        rows = [r for r in rows if r["seed"] == first]
    for r in rows:  # a repair episode has a main agent, and so its token count; without one, no saving can be told
        if r.get("main_agent_tokens") is None:
            raise CaseStudyError(f"the repair record {r['key']} has no main_agent_tokens (null)")
    if main_agent is None and rows:  # the first main agent in the records (the config's first)
        main_agent = rows[0]["main_agent"]
    return {(r["subagent"], r["task_id"]): r for r in rows if r["main_agent"] == main_agent}


def savings(records: list[dict], subagent: str, main_agent: str | None = None) -> list[tuple[bool, int, str]]:
    """(real repository, main-agent tokens saved, task) for each repair task with a `none` and a `subagent` episode
    of the same outcome and no error, largest saving last."""
    by = _repair(records, main_agent)
    candidates = []
    for (sub, task_id), r in by.items():
        base = by.get(("none", task_id))
        if sub != subagent or base is None or r.get("resolved") != base.get("resolved"):
            continue
        if r.get("error") or base.get("error"):
            continue
        real = r.get("source", SYNTHETIC) != SYNTHETIC
        candidates.append((real, base["main_agent_tokens"] - r["main_agent_tokens"], task_id))
    if not candidates:
        raise CaseStudyError(f"no repair task has both a `none` and a `{subagent}` episode with the same outcome")
    return sorted(candidates)


def pick_task(records: list[dict], subagent: str, main_agent: str | None = None) -> str:
    """The repair task where delegation saved the most main-agent tokens at equal outcome, taken among the
    real-repository instances (registry mutants, SWE-style manifests) when any qualify, else among all."""
    return savings(records, subagent, main_agent)[-1][2]


def median_task(records: list[dict], subagent: str, main_agent: str | None = None) -> str:
    """The repair task of the median saving (the lower median at an even count), over all that qualify."""
    ordered = sorted(savings(records, subagent, main_agent), key=lambda c: (c[1], c[2]))
    return ordered[(len(ordered) - 1) // 2][2]


def case_study(
    records: list[dict],
    task_id: str | None = None,
    subagent: str = "scripted",
    main_agent: str | None = None,
    tokenizer: str = "qwen",
) -> dict:
    task_id = task_id or pick_task(records, subagent, main_agent)
    pick = {s: r for (s, t), r in _repair(records, main_agent).items() if t == task_id}
    if "none" not in pick or subagent not in pick:
        raise CaseStudyError(f"task {task_id} lacks a `none` or `{subagent}` repair episode in the records")
    without, with_ = pick["none"], pick[subagent]
    counter = TokenCounter(tokenizer)
    median = median_task(records, subagent, main_agent)
    both = {s: r for (s, t), r in _repair(records, main_agent).items() if t == median}

    def side(r: dict) -> dict:
        return {
            "main_agent_tokens": r["main_agent_tokens"],
            "main_agent_turns": r.get("main_agent_turns"),
            "direct_terminal_calls": r.get("direct_terminal_calls"),
            "subagent_calls": r.get("subagent_calls"),
            "resolved": bool(r.get("resolved")),
        }

    median_side = {
        "task_id": median,
        "without_subagent": side(both["none"]),
        "with_subagent": side(both[subagent]),
        "token_ratio": round(both[subagent]["main_agent_tokens"] / max(1, both["none"]["main_agent_tokens"]), 4),
    }
    return {
        "task_id": task_id,
        "source": with_.get("source"),
        "main_agent": with_["main_agent"],
        "subagent": subagent,
        "without_subagent": side(without),
        "with_subagent": side(with_)
        | {
            "subagent_commands": sum(len(e.get("commands") or []) for e in with_["subagent_episodes"]),
            "rerun_rate": with_.get("rerun_rate"),
            "calls": [
                {
                    "query": e.get("query"),
                    "commands": e.get("commands") or [],
                    "summary": e.get("answer") or "",
                    "summary_tokens": counter.text(e.get("answer") or ""),
                }
                for e in with_["subagent_episodes"]
            ],
        },
        "token_ratio": round(with_["main_agent_tokens"] / max(1, without["main_agent_tokens"]), 4),
        "median_gap": median_side,
        "tokenizer": tokenizer,
        "config_hash": with_.get("config_hash"),
        "git_commit": with_.get("git_commit"),
    }
