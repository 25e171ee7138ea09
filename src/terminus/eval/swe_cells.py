"""SWE-bench-family benchmarks in the grid (`swebench-pro`, `swe-sharp`, `swebench-verified`: a benchmark name
that is a config under configs/benchmarks/). The main agent gets the instance's problem statement in the instance's
environment (its image at its repository path, or a local repository at its base commit), its edits become a patch,
and the official rule grades it in a fresh sandbox: resolved iff every FAIL_TO_PASS and PASS_TO_PASS test passes.
Each cell also writes its predictions in SWE-bench's format, `eval/predictions/<cell>.jsonl`, so the official
harnesses can confirm our grading."""

from __future__ import annotations

import time
from pathlib import Path

from terminus.eval.cells import SEP, CellRun
from terminus.eval.main_episode import main_agent_fields, main_brain
from terminus.eval.record import SweRecord
from terminus.mainagent.harness import MAIN_OUTPUT_CHARS, MainAgentLoop, Workbench
from terminus.mainagent.instance import AtWorkdir, InstanceWorkbench
from terminus.mainagent.tokens import TokenCounter
from terminus.sandbox import Limits
from terminus.swe import grade_patch, instance_sandbox, load_instances, patch_from_sandbox, write_predictions

GRID_BENCHMARKS = ("repair", "execution")


def is_swe(bench: str) -> bool:
    return bench not in GRID_BENCHMARKS


def swe_instances(eval_cfg: dict, bench: str) -> list:
    swe = eval_cfg.get("swe") or {}
    dataset = (swe.get("datasets") or {}).get(bench)
    return load_instances(bench, dataset=dataset, limit=eval_cfg.get("max_tasks") or swe.get("limit"))


def swe_episode(inst, cell: CellRun, *, tokenizer: str, timeout_s: float) -> dict:
    start = time.perf_counter()
    key = cell.key(inst.instance_id)
    sandbox, policy = cell.sandbox, cell.policy
    limits = Limits(output_head_bytes=MAIN_OUTPUT_CHARS // 2, output_tail_bytes=MAIN_OUTPUT_CHARS // 2)
    turns = cell.sub["tool_call_limit"]
    patch, error = "", None
    # the instance brings its environment (an image, or a local repository) into the run's sandbox
    with instance_sandbox(inst, sandbox, limits, for_agent=True) as (box, workdir):
        if inst.repo_path:  # a local repository: the workspace is the checkout, tools work on the host copy
            bench_tools = Workbench(box, sandbox, policy, turns, cell.episode_context())  # subagent: run's sandbox
        else:  # an image: the repository is at the image's path; tools and subagent use the container itself
            bench_tools = InstanceWorkbench(
                AtWorkdir(box, inst.workdir or "/"), sandbox, policy, turns, cell.episode_context()
            )
        result = MainAgentLoop(main_brain(cell.main, cell.seed), TokenCounter(tokenizer)).run(
            bench_tools, inst.problem_statement, key
        )
        try:
            patch = patch_from_sandbox(box, inst, workdir)
        except Exception as err:  # an unreadable tree is an unresolved instance, recorded
            error = f"{type(err).__name__}: {err}"
    grade = grade_patch(inst, patch, sandbox, timeout_s=timeout_s)
    report = grade.report()
    fields = main_agent_fields(cell, inst.instance_id, inst.language, inst.family, result)
    return SweRecord(
        **fields | {"error": result.error or error or grade.error},
        resolved=float(grade.resolved),
        fail_to_pass=report["fail_to_pass"],
        pass_to_pass=report["pass_to_pass"],
        model_patch=patch,
        wall_s=round(time.perf_counter() - start, 3),
        **cell.stamp,
    ).to_dict()


def write_cell_predictions(records: list[dict], out_dir: Path, name: str) -> Path:
    """`eval/predictions/<cell>.jsonl` in SWE-bench's format: {instance_id, model_name_or_path, model_patch}."""

    main, sub, context = name.split(SEP)[:3]
    label = f"{main}+{sub}" if context == "full" else f"{main}+{sub}+{context}"
    rows = [
        {"instance_id": r["task_id"], "model_name_or_path": label, "model_patch": r.get("model_patch") or ""}
        for r in records
    ]
    path = out_dir / "predictions" / f"{name}.jsonl"
    write_predictions(rows, path, "swebench")
    return path
