"""What the grid's main-agent cells share (repair in `grid`, the SWE family in `swe_cells`): the main agent a spec
names, and the fields of its episode's record (`terminus.eval.record`). Below both, so neither imports the other."""

from __future__ import annotations

from terminus.eval.cells import CellRun
from terminus.eval.metrics import history_commands, rerun_rate
from terminus.eval.usable import fallback_rate, usable_rate, verdict_correct
from terminus.mainagent.brains import LLMMainAgent, ReplayMainAgent
from terminus.mainagent.reader import ReaderMainAgent
from terminus.models.openai_compat import api_key_from_env, endpoint_limits


def main_brain(spec: dict, seed: int | None = None):
    """The main agent a spec names; an llm one samples at its temperature with the cell's seed (sent to endpoints
    that honour it), so that a cell's seeds are runs that can differ."""
    if spec["kind"] == "replay":
        return ReplayMainAgent()
    if spec["kind"] == "reader":
        return ReaderMainAgent()
    key = api_key_from_env(spec.get("api_key_env"), f"main agent {spec['name']}")
    options = endpoint_limits(spec) | {"temperature": float(spec.get("temperature", 0)), "seed": seed}
    return LLMMainAgent(spec["model"], base_url=spec.get("base_url"), api_key=key, **options)


def history_fields(main_commands: list[str], subagent_episodes: list[dict]) -> dict:
    """The record's history counts: the main agent's own commands and its subagents' together, and the latter."""
    sub = history_commands(*(e.get("commands") or [] for e in subagent_episodes))
    return {"history_commands": history_commands(main_commands) + sub, "subagent_history_commands": sub}


def main_agent_fields(
    cell: CellRun, task_id: str, language: str, source: str, result, *, task_type: str = "", facts: dict | None = None
) -> dict:
    """The fields of a main-agent episode's record (`MainAgentRecord`, `SweRecord`) that its cell and its
    `MainAgentResult` give; the caller adds the outcome, the wall time and the stamp. `facts`: the task's, for the
    first subagent answer's verdict."""
    episodes = result.subagent_episodes
    context_tokens = result.context.get("prompt_tokens", 0) + result.context.get("completion_tokens", 0)
    cached = result.cache_read_tokens
    cost = cell.prices.episode(
        main=(result.prompt_tokens - cached, cached, result.completion_tokens),
        sub=(
            sum(e["trajectory"]["prompt_tokens"] for e in episodes),
            sum(e["trajectory"]["completion_tokens"] for e in episodes),
        ),
        sub_s=result.subagent_wall_s,
        ctx=result.context,
    )
    return {
        "key": cell.key(task_id),
        "main_agent": cell.main["name"],
        "subagent": cell.sub["name"],
        "benchmark": cell.benchmark,
        "seed": cell.seed,
        "task_id": task_id,
        "context": cell.context,
        "task_type": task_type,
        "language": language,
        "source": source,
        "main_tokens_uncached": result.prompt_tokens - cached,
        "main_tokens_cache_read": cached,
        "main_tokens_output": result.completion_tokens,
        "peak_context_tokens": result.peak_context_tokens,
        "total_tokens": result.tokens + result.subagent_tokens + context_tokens,
        **cost,
        "context_tokens": context_tokens,
        "context_stats": result.context,
        "usable_answer_rate": usable_rate(episodes),
        "fallback_rate": fallback_rate(episodes, result.direct_commands),
        "verdict_correct": verdict_correct(episodes[0]["answer"], facts) if episodes and facts else None,
        "turn_limit": float(result.termination == "turn_limit"),
        "main_agent_tokens": result.tokens,
        "main_prompt_tokens": result.prompt_tokens,
        "main_completion_tokens": result.completion_tokens,
        "main_agent_turns": result.turns,
        "direct_terminal_calls": result.direct_terminal_calls,
        "subagent_calls": result.subagent_calls,
        "rerun_rate": rerun_rate(result.subagent_episodes, result.direct_commands),
        "direct_commands": result.direct_commands,
        "subagent_tokens": result.subagent_tokens,
        "subagent_turns": result.subagent_turns,
        "timeouts": result.timeouts,
        **history_fields([d["command"] for d in result.direct_commands], result.subagent_episodes),
        "error": result.error,
        "subagent_episodes": [{k: v for k, v in e.items() if k != "trajectory"} for e in result.subagent_episodes],
    }
