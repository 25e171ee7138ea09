"""The grid's cells (main agent x subagent x benchmark x seed) and their names, `<main>__<sub>__<bench>__<seed>`.

Light on purpose (no model imports): the Snakefile reads it to make one job per cell, and `terminus eval --cell`
runs one. A cell's name is also its file name under `eval/cells/` and `eval/predictions/`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from terminus.errors import TerminusError
from terminus.runspec import LOCAL_POLICIES
from terminus.sandbox.spec import SandboxSpec

SEP = "__"


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

    def key(self, task_id: str) -> str:
        """The record key of this cell's episode on `task_id`."""
        return record_key(self.main["name"], self.sub["name"], self.benchmark, self.seed, task_id)


def record_key(main: str, sub: str, benchmark: str, seed: int, task_id: str) -> str:
    """An EvalRecord's key: its cell and task (a rerun does only the episodes whose keys are missing)."""
    return f"{main}|{sub}|{benchmark}|{seed}|{task_id}"


def cells(eval_cfg: dict) -> list[tuple[dict, dict, str, int]]:
    out = []
    for main in eval_cfg["main_agents"]:
        for sub in eval_cfg["subagents"]:
            for bench in eval_cfg["benchmarks"]:
                if bench == "execution" and sub["policy"] == "none":
                    continue  # nothing to forward a query to
                for seed in eval_cfg["seeds"]:
                    out.append((main, sub, bench, seed))
    return out


def cell_name(main: dict, sub: dict, bench: str, seed: int) -> str:
    return SEP.join((main["name"], sub["name"], bench, str(seed)))


def cell_names(eval_cfg: dict) -> list[str]:
    return [cell_name(*cell) for cell in cells(eval_cfg)]


def find_cell(eval_cfg: dict, name: str) -> tuple[dict, dict, str, int]:
    for cell in cells(eval_cfg):
        if cell_name(*cell) == name:
            return cell
    known = ", ".join(cell_names(eval_cfg)) or "(none)"
    raise CellError(f"no eval cell {name!r} in this config; its cells are: {known}")


def cell_subagent(eval_cfg: dict, name: str) -> dict:
    return find_cell(eval_cfg, name)[1]


def cell_needs_gpu(eval_cfg: dict, name: str) -> bool:
    """Cells whose subagent is a local model run on a GPU node; endpoint-only and scripted cells do not."""
    return cell_subagent(eval_cfg, name)["policy"] in LOCAL_POLICIES
