"""A Serilog-style side by side for one task: the main agent without the subagent and with it."""

from __future__ import annotations


def pick_task(records: list[dict], subagent: str) -> str:
    """The repair task where delegation saved the most main-agent tokens at equal outcome."""
    by = {(r["subagent"], r["task_id"]): r for r in records if r["benchmark"] == "repair"}
    best, best_saving = None, None
    for (sub, task_id), r in by.items():
        base = by.get(("none", task_id))
        if sub != subagent or base is None or r["resolved"] != base["resolved"]:
            continue
        saving = base["main_agent_tokens"] - r["main_agent_tokens"]
        if best_saving is None or saving > best_saving:
            best, best_saving = task_id, saving
    if best is None:
        raise ValueError(f"no repair task has both a `none` and a `{subagent}` episode")
    return best


def case_study(records: list[dict], task_id: str | None = None, subagent: str = "scripted") -> dict:
    task_id = task_id or pick_task(records, subagent)
    pick = {r["subagent"]: r for r in records if r["task_id"] == task_id and r["benchmark"] == "repair"}
    if "none" not in pick or subagent not in pick:
        raise ValueError(f"task {task_id} lacks a `none` or `{subagent}` repair episode in the records")
    without, with_ = pick["none"], pick[subagent]

    def side(r: dict) -> dict:
        return {
            "main_agent_tokens": r["main_agent_tokens"],
            "main_agent_turns": r["main_agent_turns"],
            "direct_terminal_calls": r["direct_terminal_calls"],
            "subagent_calls": r["subagent_calls"],
            "resolved": bool(r["resolved"]),
        }

    return {
        "task_id": task_id,
        "main_agent": with_["main_agent"],
        "subagent": subagent,
        "without_subagent": side(without),
        "with_subagent": side(with_)
        | {
            "subagent_commands": sum(len(e["commands"]) for e in with_["subagent_episodes"]),
            "calls": [
                {"query": e["query"], "commands": e["commands"], "summary": e["answer"]}
                for e in with_["subagent_episodes"]
            ],
        },
        "token_ratio": round(with_["main_agent_tokens"] / max(1, without["main_agent_tokens"]), 4),
        "config_hash": with_.get("config_hash"),
        "git_commit": with_.get("git_commit"),
    }
