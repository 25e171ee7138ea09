"""SWE-bench-family benchmarks in the grid (`swebench-pro`, `swe-sharp`, `swebench-verified`: a benchmark name
that is a config under configs/benchmarks/). The main agent gets the instance's problem statement in the instance's
environment (its image at its repository path, or a local repository at its base commit), its edits become a patch,
and the official rule grades it in a fresh sandbox: resolved iff every FAIL_TO_PASS and PASS_TO_PASS test passes.
Each cell also writes its predictions in SWE-bench's format, `eval/predictions/<cell>.jsonl`, so the official
harnesses can confirm our grading.

Harbor benchmarks (`terminal-bench-2`, family `harbor`: `terminus.swe.harbor`) come the same way: the main agent
gets the task's instruction in the task's image, at its working folder, and when it stops the task's verifier runs
in that sandbox (`harbor_grade.grade_in_sandbox`); resolved iff its reward is 1 (`harbor_episode`). They have no
patch, so no predictions file."""

from __future__ import annotations

import time
from pathlib import Path

from terminus.eval.cells import SEP, CellRun
from terminus.eval.main_episode import main_agent_fields, main_brain
from terminus.eval.record import HarborRecord, SweRecord
from terminus.mainagent.harness import MAIN_OUTPUT_CHARS, MainAgentLoop, Workbench
from terminus.mainagent.instance import AtWorkdir, InstanceWorkbench
from terminus.mainagent.tokens import TokenCounter
from terminus.sandbox import Limits, make_sandbox
from terminus.swe import grade_patch, instance_sandbox, load_instances, patch_from_sandbox, write_predictions
from terminus.swe.harbor import HarborTask
from terminus.swe.harbor_grade import grade_in_sandbox as verify_harbor
from terminus.swe.harbor_grade import start_env
from terminus.swe.record import GradeError

GRID_BENCHMARKS = ("repair", "execution")


def is_swe(bench: str) -> bool:
    return bench not in GRID_BENCHMARKS


def swe_instances(eval_cfg: dict, bench: str) -> list:
    swe = eval_cfg.get("swe") or {}
    dataset = (swe.get("datasets") or {}).get(bench)
    return load_instances(bench, dataset=dataset, limit=eval_cfg.get("max_tasks") or swe.get("limit"))


def is_harbor(item) -> bool:
    return isinstance(item, HarborTask)


def harbor_limits(task: HarborTask) -> Limits:
    """The main agent's output caps; no memory or CPU-time rlimit (the tasks build and train things, and Harbor
    sets none but the container's), and room for the longest of the agent's and the verifier's timeouts."""
    longest = max(task.verifier_timeout_s, task.agent_timeout_s or 0.0, 1800.0)
    half = MAIN_OUTPUT_CHARS // 2
    return Limits(
        address_space_mb=None, cpu_time_s=None, max_timeout_s=longest, output_head_bytes=half, output_tail_bytes=half
    )


def harbor_episode(task: HarborTask, cell: CellRun, *, tokenizer: str) -> dict:
    """One Terminal-Bench task: the main agent works in the task's image from its instruction; then, in the same
    sandbox, the task's verifier runs and its reward decides (`harbor_grade`)."""
    start = time.perf_counter()
    spec = cell.sandbox.for_task(task.image)
    if not spec.runs_image:
        raise GradeError(f"{task.instance_id} runs in image {task.image}: use --sandbox docker or apptainer")
    with make_sandbox(spec, None, harbor_limits(task), network=task.network) as box:
        env = start_env(box)  # the verifier's, as a fresh exec in the image has it: not what the agent exported
        turns = cell.sub["tool_call_limit"]
        bench_tools = InstanceWorkbench(AtWorkdir(box, task.workdir), spec, cell.policy, turns, cell.episode_context())
        result = MainAgentLoop(main_brain(cell.main, cell.seed), TokenCounter(tokenizer)).run(
            bench_tools, task.instruction, cell.key(task.instance_id)
        )
        grade = verify_harbor(box, task, env=env)
    fields = main_agent_fields(cell, task.instance_id, task.language, task.family, result)
    return HarborRecord(
        **fields | {"error": result.error or grade.error},
        resolved=float(grade.resolved),
        verifier_reward=grade.reward,
        verifier_log=grade.log[-4000:],
        wall_s=round(time.perf_counter() - start, 3),
        **cell.stamp,
    ).to_dict()


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
