"""The grid's cells (main agent x subagent x context x benchmark x seed) and their names,
`<main>__<sub>__<context>__<bench>__<seed>`.

Light on purpose (no model imports): the Snakefile reads it to make one job per cell, and `terminus eval --cell`
runs one. A cell's name is also its file name under `eval/cells/` and `eval/predictions/`.

- The context axis is the main agent's context policy (`eval.contexts`: full, truncate, mask, extract, summarize,
  prune). Execution cells forward a query to the subagent with no main agent, so they run under `full` and the
  first main agent alone (its name is in theirs).
- `eval.exclude` leaves cells out of the product (the paper runs chosen arms, not every combination).
- A cell whose every policy is deterministic (a reader or replay main agent, or an endpoint at temperature 0; no
  subagent, the scripted one, or a local model at temperature 0; a context with no model or one at temperature 0)
  runs once, under the first seed: its other seeds would repeat it exactly. `cell_runs_once` says which.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from terminus.errors import TerminusError
from terminus.mainagent.context import ContextPolicy
from terminus.runspec import LOCAL_POLICIES
from terminus.sandbox.spec import SandboxSpec

SEP = "__"
FULL = "full"


class CellError(TerminusError, ValueError):
    pass


@dataclass(frozen=True)
class CellRun:
    """What every episode of one cell shares, handed to the episode functions as one argument (they took 9-11
    positional arguments, in three orders)."""

    main: dict
    sub: dict
    benchmark: str
    seed: int
    sandbox: SandboxSpec  # the run's; an SWE instance brings its own image and binds into it (`for_task`)
    stamp: dict
    policy: Any  # the subagent's policy, made once for the cell
    context: str = FULL
    context_spec: dict | None = None  # eval.contexts[context]
    context_policy: Any = None  # the summarize/prune context's model, made once for the cell
    prices: Any = None  # terminus.eval.cost.CellPrices

    def episode_context(self) -> ContextPolicy:
        """A fresh context policy for one episode (its stats are the episode's), sharing the cell's model."""
        return ContextPolicy(self.context_spec, self.context_policy)

    def key(self, task_id: str) -> str:
        """The record key of this cell's episode on `task_id`."""
        return record_key(self.main["name"], self.sub["name"], self.context, self.benchmark, self.seed, task_id)


def record_key(main: str, sub: str, context: str, benchmark: str, seed: int, task_id: str) -> str:
    """An EvalRecord's key: its cell and task (a rerun does only the episodes whose keys are missing)."""
    return f"{main}|{sub}|{context}|{benchmark}|{seed}|{task_id}"


def _matches(rule: dict, values: dict) -> bool:
    named = {k: v for k, v in rule.items() if v is not None}
    return bool(named) and all(values[k] in ([v] if isinstance(v, str) else v) for k, v in named.items())


def deterministic(main: dict, sub: dict, context: dict) -> bool:
    """Every policy of the cell gives the same episode on every run: reruns under other seeds would repeat it."""
    main_fixed = main["kind"] in ("reader", "replay") or float(main.get("temperature", 0)) == 0
    sub_fixed = sub["policy"] in ("none", "scripted") or float(sub.get("temperature", 0)) == 0
    model = context.get("model")
    context_fixed = model is None or float(model.get("temperature", 0)) == 0
    return main_fixed and sub_fixed and context_fixed


def _contexts(eval_cfg: dict) -> dict[str, dict]:
    return eval_cfg.get("contexts") or {FULL: {"kind": "full"}}


def runs_once(main: dict, sub: dict, context: dict, bench: str) -> bool:
    """The cell is `deterministic`; an execution cell has no main agent to sample."""
    return deterministic(main if bench != "execution" else {"kind": "reader"}, sub, context)


def cells(eval_cfg: dict) -> list[tuple[dict, dict, str, str, int]]:
    out = []
    contexts = _contexts(eval_cfg)
    for i, main in enumerate(eval_cfg["main_agents"]):
        for sub in eval_cfg["subagents"]:
            for context, spec in contexts.items():
                for bench in eval_cfg["benchmarks"]:
                    if bench == "execution" and (sub["policy"] == "none" or context != FULL or i > 0):
                        # nothing to forward a query to; no main agent, so no context to manage, and the same
                        # episodes under every main agent: run under the first alone
                        continue
                    values = {"main": main["name"], "subagent": sub["name"], "context": context, "benchmark": bench}
                    if any(_matches(rule, values) for rule in eval_cfg.get("exclude") or []):
                        continue
                    seeds = eval_cfg["seeds"][:1] if runs_once(main, sub, spec, bench) else eval_cfg["seeds"]
                    for seed in seeds:
                        out.append((main, sub, context, bench, seed))
    return out


def cell_name(main: dict, sub: dict, context: str, bench: str, seed: int) -> str:
    return SEP.join((main["name"], sub["name"], context, bench, str(seed)))


def cell_names(eval_cfg: dict) -> list[str]:
    return [cell_name(*cell) for cell in cells(eval_cfg)]


def find_cell(eval_cfg: dict, name: str) -> tuple[dict, dict, str, str, int]:
    for cell in cells(eval_cfg):
        if cell_name(*cell) == name:
            return cell
    known = ", ".join(cell_names(eval_cfg)) or "(none)"
    raise CellError(f"no eval cell {name!r} in this config; its cells are: {known}")


def cell_runs_once(eval_cfg: dict, name: str) -> bool:
    """The cell is deterministic, so it runs under its first seed alone (`deterministic`)."""
    main, sub, context, bench, _ = find_cell(eval_cfg, name)
    return len(eval_cfg["seeds"]) > 1 and runs_once(main, sub, _contexts(eval_cfg)[context], bench)


def cell_subagent(eval_cfg: dict, name: str) -> dict:
    return find_cell(eval_cfg, name)[1]


def cell_context_model(eval_cfg: dict, name: str) -> dict | None:
    """The model the cell's context policy calls (summarize, prune), else None."""
    return _contexts(eval_cfg).get(find_cell(eval_cfg, name)[2], {}).get("model")


def cell_needs_gpu(eval_cfg: dict, name: str) -> bool:
    """Cells with a local model (the subagent, or the context's model) run on a GPU node; the others do not."""
    model = cell_context_model(eval_cfg, name)
    return cell_subagent(eval_cfg, name)["policy"] in LOCAL_POLICIES or (
        model is not None and model["policy"] in LOCAL_POLICIES
    )
