"""`terminus eval --config ...`: the evaluation grid. Cells = main agent x subagent x context x benchmark x seed.

Benchmarks:
- `repair`: fault-injected tasks of the split (synthetic failing-test projects, registry mutants); the main
  agent works until it stops; resolved = the task's tests pass on its edited tree, checked in a fresh sandbox.
- SWE-family benchmarks (`swebench-pro`, ...) and Terminal-Bench 2.0 (`terminal-bench-2`): instances in their own
  images (`swe_cells`), graded by each benchmark's official rule.
- `execution`: the split's execution tasks; the task's query is forwarded to the subagent as is (isolated from
  any main agent, as in RL) and its episode is scored by the Scorer (judge and fact checker).

Each cell runs on its own (`terminus eval --cell NAME`, one Snakemake job per cell) with its subagent made once for
all its episodes, into `cells/<cell>.jsonl`; `records.jsonl` merges the cells. Records (EvalRecord, JSON lines) are
keyed by cell and task: a rerun after an interruption does only the missing episodes. `summary.csv` has, per arm
(main agent x subagent x context on a benchmark, its seeds pooled), every metric with a 95% cluster-bootstrap
interval over tasks and the paired difference against the arm without a subagent under the full context;
`noninferiority.csv` tests each arm's resolve rate against the reference arms (`terminus.eval.noninferiority`).
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Iterator
from functools import partial
from pathlib import Path

from terminus.agent.trajectory import command_brief
from terminus.collect.provenance import model_stamp
from terminus.collect.runner import run_episode, run_jobs
from terminus.config import resolve, resolve_model
from terminus.config import stamp as make_stamp
from terminus.eval.cells import CellError, CellRun, cell_names, cell_runs_once, find_cell
from terminus.eval.cost import CellPrices
from terminus.eval.main_episode import history_fields, main_agent_fields, main_brain
from terminus.eval.record import EvalRecord, MainAgentRecord
from terminus.eval.swe_cells import (
    harbor_episode,
    is_harbor,
    is_swe,
    swe_episode,
    swe_instances,
    write_cell_predictions,
)
from terminus.eval.usable import usable_rate, verdict_correct
from terminus.io import read_jsonl, write_jsonl_atomic
from terminus.mainagent.brains import test_command
from terminus.mainagent.harness import run_main_agent
from terminus.mainagent.tokens import TokenCounter
from terminus.models import shared_policy
from terminus.models.local import warm_imports
from terminus.models.openai_compat import api_key_from_env, endpoint_limits
from terminus.runspec import LOCAL_POLICIES, RunSpec
from terminus.sandbox import SandboxError, SandboxSpec, make_sandbox
from terminus.sandbox.fdtree import remove_tree
from terminus.settings import Eval, Subagent, field_default, filled
from terminus.tasks.record import Task, load_tasks

log = logging.getLogger(__name__)


def verify(task: Task, tree: Path, sandbox: SandboxSpec) -> bool:
    """The task's tests pass on the edited tree, in a fresh sandbox."""
    with make_sandbox(sandbox, tree) as box:
        result = box.run(test_command(task), 600)
    return result.exit_code == 0 and not result.timed_out


def repair_episode(task: Task, cell: CellRun, *, tasks_file: Path, tokenizer: str) -> dict:

    start = time.perf_counter()
    key = cell.key(task.id)
    result, tree = run_main_agent(
        main_brain(cell.main, cell.seed),
        task,
        tasks_file,
        subagent_policy=cell.policy,
        sandbox=cell.sandbox,
        counter=TokenCounter(tokenizer),
        episode_id=key,
        subagent_turns=cell.sub["tool_call_limit"],
        context=cell.episode_context(),
    )
    resolved = verify(task, tree, cell.sandbox) if result.error is None else False
    remove_tree(tree.parent)  # a copy of what the sandbox wrote: iterative, never raises (a deep tree is legal)
    fields = main_agent_fields(
        cell, task.id, task.language, task.source, result, task_type=task.task_type, facts=task.facts
    )
    wall_s = round(time.perf_counter() - start, 3)
    return MainAgentRecord(**fields, resolved=float(resolved), wall_s=wall_s, **cell.stamp).to_dict()


def execution_episode(task: Task, cell: CellRun, *, tasks_file: Path, scorer) -> dict:
    start = time.perf_counter()
    key = cell.key(task.id)
    turns = cell.sub["tool_call_limit"]
    episode = run_episode(task, tasks_file, cell.policy, sandbox=cell.sandbox, max_turns=turns, trajectory_id=key)
    sub_s = time.perf_counter() - start
    traj = episode.to_dict()
    verdict = scorer.score([traj])[0]
    episode = {
        "query": task.query,
        "commands": [t["command"] for t in traj["turns"]],
        "turns": [command_brief(t) for t in traj["turns"]],  # how each ended, for `terminus view`
        "answer": "\n".join(f"Command: {e['command']}\nSummary: {e['summary']}" for e in traj["final_answer"] or []),
        "termination": traj["termination"],
    }
    tokens = traj["prompt_tokens"] + traj["completion_tokens"]
    return EvalRecord(
        key=key,
        main_agent=cell.main["name"],
        subagent=cell.sub["name"],
        benchmark="execution",
        seed=cell.seed,
        task_id=task.id,
        context=cell.context,
        task_type=task.task_type,
        language=task.language,
        source=task.source,
        total_tokens=tokens,
        **cell.prices.episode(main=None, sub=(traj["prompt_tokens"], traj["completion_tokens"]), sub_s=sub_s),
        usable_answer_rate=usable_rate([{"final_answer": traj["final_answer"], "commands": episode["commands"]}]),
        verdict_correct=verdict_correct(episode["answer"], task.facts),
        subagent_calls=1,
        subagent_tokens=tokens,
        subagent_turns=len(traj["turns"]),
        timeouts=sum(t["timed_out"] for t in traj["turns"]),
        **history_fields([], [episode]),
        error=traj.get("error"),
        subagent_episodes=[episode],
        judge_score=verdict["judge_score"],
        fact_precision=verdict["fact_precision"],
        fact_recall=verdict["fact_recall"],
        hallucinated=len(verdict["hallucinated"]),
        reward=verdict["reward"],
        wall_s=round(time.perf_counter() - start, 3),
        **cell.stamp,
    ).to_dict()


def fail_alone(job, cell: CellRun, item_id: str, language: str, source: str, task_type: str = ""):
    """`job` whose sandbox failure (an image that does not start, a setup that fails, an engine that goes away) ends
    its own episode, not the cell: a record with `error` "infra: ..." and no outcome (`resolved` None, so it is out
    of the resolve rate and unpaired in the non-inferiority test, and counted in `error_rate`). The cell's file keeps
    it as failed, so a rerun (a resubmission) tries that episode again. A bug is not caught."""

    def run() -> dict:
        try:
            return job()
        except SandboxError as err:
            log.warning("episode %s failed to run: %s", cell.key(item_id), err)
            return EvalRecord(
                key=cell.key(item_id),
                main_agent=cell.main["name"],
                subagent=cell.sub["name"],
                benchmark=cell.benchmark,
                seed=cell.seed,
                task_id=item_id,
                language=language,
                source=source,
                context=cell.context,
                task_type=task_type,
                error=f"infra: {type(err).__name__}: {err}",
                **cell.stamp,
            ).to_dict()

    return run


def _local_model(model: str, where: str) -> str:
    """A local model's folder, absolute when it exists; a hub id (e.g. Qwen/Qwen3-4B) as given; an error naming
    `where` for a path that does not exist."""
    found = resolve_model(model)
    if not Path(found).exists() and (Path(found).is_absolute() or found.startswith((".", "results/"))):
        raise CellError(f"{where}: model folder {resolve(found)} does not exist")
    return found


def check_models(eval_cfg: Eval, names: list[str] | None = None) -> Eval:
    """Local models of the named cells (default: all), their subagents' and their contexts' (a summarizer or pruner),
    name folders that exist: the eval section with those models as absolute paths (a new one; the loaded config is
    not changed)."""

    found = [find_cell(filled(eval_cfg), n) for n in names] if names else None
    wanted = {cell[1]["name"] for cell in found} if found else None
    wanted_contexts = {cell[2] for cell in found} if found else None
    contexts = {}
    for name, ctx in eval_cfg.contexts.items():
        if ctx.model and ctx.model.policy in LOCAL_POLICIES and (wanted_contexts is None or name in wanted_contexts):
            model = _local_model(ctx.model.model, f"eval.contexts {name}")
            ctx = ctx.model_copy(update={"model": ctx.model.model_copy(update={"model": model})})
        contexts[name] = ctx
    subagents = []
    for sub in eval_cfg.subagents:
        if sub.model and sub.policy in LOCAL_POLICIES and (wanted is None or sub.name in wanted):
            sub = sub.model_copy(update={"model": _local_model(sub.model, f"eval.subagents {sub.name}")})
        subagents.append(sub)
    return eval_cfg.model_copy(update={"subagents": subagents, "contexts": contexts})


@contextlib.contextmanager
def served_subagent(spec: dict, log_dir: Path, seed: int | None = None) -> Iterator:
    """The cell's subagent policy (None for No-Subagent), made once for all its episodes (`shared_policy`), sampling
    at its temperature with the cell's seed."""
    if spec["policy"] == "none":
        yield None
        return
    temperature = float(spec.get("temperature", 0))
    sampling = {"temperature": temperature, "seed": seed if temperature > 0 else None}

    options = {}
    if spec["policy"] == "openai" and spec.get("api_key_env"):
        options["api_key"] = api_key_from_env(spec["api_key_env"], f"subagent {spec['name']}")
    if spec["policy"] == "openai":
        options.update(endpoint_limits(spec))
    with shared_policy(
        spec["policy"],
        spec.get("model"),
        spec.get("base_url"),
        served_name=spec["name"],
        log_dir=log_dir,
        max_new_tokens=spec.get("max_new_tokens", field_default(Subagent, "max_new_tokens")),
        max_model_len=spec.get("max_model_len"),
        enable_thinking=spec.get("enable_thinking"),
        gpu_memory_utilization=spec.get("gpu_memory_utilization"),
        **sampling,
        **options,
    ) as policy:
        yield policy


@contextlib.contextmanager
def context_model(spec: dict | None, log_dir: Path, seed: int | None = None) -> Iterator:
    """The model a summarize or prune context calls, made once for the cell (None for the other contexts)."""
    model = (spec or {}).get("model")
    if not model:
        yield None
        return
    sub = {
        "name": f"context-{spec['kind']}",
        "policy": model["policy"],
        "model": model["model"],
        "max_new_tokens": model.get("max_new_tokens", 512),
        "temperature": model.get("temperature", 0),
    }
    sub |= {k: model[k] for k in ("base_url", "api_key_env") if model.get(k)}
    with served_subagent(sub, log_dir, seed) as policy:
        yield policy


def run_cell(
    run: RunSpec,
    tasks_file: Path,
    out_dir: Path,
    scorer,
    name: str,
    *,
    show_progress: bool = True,
    resume: dict | None = None,
) -> list:
    """One cell's episodes (resumable) into `<out_dir>/cells/<name>.jsonl`, in the run's sandbox; its subagent is
    made once. `resume`: run_jobs's provenance, force and retry_failed (a rerun with other inputs is refused)."""

    config, sandbox, ev = run.config, run.sandbox, run.cfg.eval
    main, sub, context, bench, seed = find_cell(config["eval"], name)
    context_spec = config["eval"]["contexts"][context]
    if cell_runs_once(config["eval"], name):
        log.info("cell %s is deterministic: it runs once, not again under seeds %s", name, config["eval"]["seeds"][1:])
    if is_swe(bench):  # SWE-family cells bring their own instances; the others run the task file's split
        work = swe_instances(config["eval"], bench)
    else:
        work = [t for t in load_tasks(tasks_file) if t.split == ev.split]
        if bench == "repair":
            work = [t for t in work if t.meta.get("fix") and t.task_type == "test-execution"]
            if not work:
                raise CellError(f"{tasks_file} has no repair tasks in the {ev.split} split")
        work = work[: ev.max_tasks or None]
    if main["kind"] == "llm":  # keys and endpoints are checked before any episode runs
        main_brain(main)
    if sub["policy"] == "transformers":
        warm_imports()
    stamp = make_stamp(config)
    if resume and resume.get("provenance") is not None and sub.get("model"):
        # the subagent's model is an input too: a cell rerun after its model was trained again starts afresh
        resume = resume | {"provenance": resume["provenance"] | {"subagent_model": model_stamp(sub["model"])}}
    tokenizer, timeout = ev.tokenizer, ev.swe.timeout_s
    if context_spec.get("model", {}).get("policy") == "transformers":
        warm_imports()
    prices = CellPrices.of(main, sub, context_spec, float(ev.gpu_hour_usd))
    with (
        served_subagent(sub, out_dir / "logs", seed) as policy,
        context_model(context_spec, out_dir / "logs", seed) as summarizer,
    ):
        cell = CellRun(main, sub, bench, seed, sandbox, stamp, policy, context, context_spec, summarizer, prices)
        jobs = []
        for item in work:
            if is_harbor(item):  # Terminal-Bench: graded by its own verifier, in the agent's sandbox
                item_id = item.instance_id
                job = partial(harbor_episode, item, cell, tokenizer=tokenizer)
            elif is_swe(bench):
                item_id = item.instance_id
                job = partial(swe_episode, item, cell, tokenizer=tokenizer, timeout_s=timeout)
            elif bench == "repair":
                item_id = item.id
                job = partial(repair_episode, item, cell, tasks_file=tasks_file, tokenizer=tokenizer)
            else:
                item_id = item.id
                job = partial(execution_episode, item, cell, tasks_file=tasks_file, scorer=scorer)
            if is_swe(bench):
                what = (getattr(item, "language", ""), getattr(item, "family", bench), "")
            else:
                what = (item.language, item.source, item.task_type)
            jobs.append((cell.key(item_id), fail_alone(job, cell, item_id, *what)))
        out = out_dir / "cells" / f"{name}.jsonl"
        records = run_jobs(jobs, out, ev.concurrency, show_progress, name, key="key", **(resume or {}))
    if is_swe(bench) and not any(is_harbor(item) for item in work):  # a Harbor task has no patch to predict
        write_cell_predictions(records, out_dir, name)
    return records


def run_grid(
    run: RunSpec,
    tasks_file: Path,
    out_dir: Path,
    scorer,
    *,
    names: list[str] | None = None,
    show_progress: bool = True,
    resume: dict | None = None,
) -> list[dict]:
    """The named cells (default: all), one after another, then `records.jsonl` of every cell file present."""
    for name in names or cell_names(run.config["eval"]):
        run_cell(run, tasks_file, out_dir, scorer, name, show_progress=show_progress, resume=resume)
    return merge_cells(run.config, out_dir)


def merge_cells(config: dict, out_dir: Path) -> list[dict]:
    """`records.jsonl` from the cell files of the config's cells; a missing cell is an error naming it."""

    records, missing = [], []
    for name in cell_names(config["eval"]):
        path = out_dir / "cells" / f"{name}.jsonl"
        if not path.is_file():
            missing.append(name)
            continue
        records += read_jsonl(path)
    if missing:
        raise CellError(f"eval cells not run yet (no {out_dir / 'cells'}/<cell>.jsonl): {', '.join(missing)}")
    records.sort(key=lambda r: r["key"])
    write_jsonl_atomic(out_dir / "records.jsonl", records)
    return records
