"""Held-out evidence that training works: base, SFT and GRPO models run the test split's tasks through the real
loop and sandbox (greedy), scored by the fact checker; GRPO's reward over its steps from its metrics log.
Writes results/<run>/training/summary.json.

Each model is made once through `models.shared_policy`, as an eval cell makes its subagent: `transformers` loads it
in this process (smoke scale), `vllm` serves it with vLLM's OpenAI-compatible server for the model's episodes,
which call it concurrently so that vLLM batches them (paper scale: `model.summary_policy`)."""

from __future__ import annotations

import hashlib
import json
import os
import random
import statistics
import sys
from functools import partial
from pathlib import Path

from terminus.collect import provenance as prov
from terminus.collect.provenance import file_sha256, model_stamp
from terminus.collect.runner import run_episode, run_jobs, start_failed
from terminus.io import read_jsonl, write_json_atomic
from terminus.judge.facts import check, fact_path, observations_of, required_facts
from terminus.judge.form import usable_answer
from terminus.models import shared_policy
from terminus.models.local import warm_imports
from terminus.sandbox.bwrap import venvs_on_path
from terminus.sandbox.spec import SandboxSpec
from terminus.settings import MAX_NEW_TOKENS
from terminus.tasks.record import Task, load_tasks
from terminus.train import TrainingInputError


class SwappedPolicy:
    """A policy that reads another task's tool output (issue 45's swapped control): before each reply, the k-th
    tool message of the conversation is replaced by the k-th of `outputs` (the last one again past its end). The
    commands still run in the sandbox, and the episode's record keeps what they really printed, so the fact checker
    scores the answer against the task's own facts and output: an answer that copies what it read states the other
    task's facts and earns nothing."""

    def __init__(self, policy, outputs: list[str]) -> None:
        if not outputs:
            raise ValueError("a swapped policy needs another task's tool output to show")
        self.policy, self.outputs, self.name = policy, outputs, f"swapped:{policy.name}"

    def respond(self, messages: list[dict], tools: list[dict], tool_choice: str | None = None) -> dict:
        shown, k = [], 0
        for message in messages:
            if message.get("role") == "tool":
                message = dict(message) | {"content": self.outputs[min(k, len(self.outputs) - 1)]}
                k += 1
            shown.append(message)
        return self.policy.respond(shown, tools, tool_choice)


def harness_path(path_var: str | None = None) -> str:
    """PATH as the pipeline's stages have it (snakemake starts `terminus` with the venv first): the harness's own
    virtual environment put first where PATH names none (`sandbox.bwrap.venvs_on_path`), else PATH as it is.
    `held_out` sets it, so that held-out episodes print what the training episodes printed whatever shell started
    the benchmark: from a plain shell the expert's `[toolchain: ...]` line once named the host's pyenv shim, a line
    no training conversation held. The sandbox itself keeps the caller's PATH (a user's `terminus exec`)."""
    path_var = os.environ.get("PATH", "") if path_var is None else path_var
    if sys.prefix == sys.base_prefix or venvs_on_path(path_var):
        return path_var
    return os.pathsep.join([os.path.join(sys.prefix, "bin"), *(e for e in path_var.split(os.pathsep) if e)])


def environment_lines(records: list[dict]) -> set[str]:
    """The lines of the episodes' tool output that describe the environment rather than the task: the expert's
    `[toolchain: <interpreter> <version>]` marks. They are the same in every episode of one environment, so a
    held-out line that no training conversation held means the model was evaluated in another environment than it
    trained in (a wiring fault: issue 45's copy control recalled a quarter of its facts when the sandbox showed
    the host's pyenv shim instead of the venv it trained with), whatever the model."""
    found = set()
    for r in records:
        for m in r.get("messages") or []:
            if m.get("role") == "tool":
                found |= {line for line in (m.get("content") or "").splitlines() if line.startswith("[toolchain: ")}
    return found


def _toolchain_path(line: str) -> str:
    """The interpreter or tool path a `[toolchain: <path> <version>]` line names."""
    return line.removeprefix("[toolchain: ").split(" ", 1)[0]


def environment_check(train: Path, evaluated: list[Path]) -> dict:
    """{train, unseen, same}: the tool paths the training trajectories' `[toolchain: ...]` lines name, and the
    evaluated episodes' lines whose path training never showed; `same` when there are none (issue 45: what the
    models read). By path, not whole line: a model may write its own toolchain echo (`command -v go` beside
    `python3 --version`), whose text is its doing, while the path a command resolves to is the environment's."""
    seen = {_toolchain_path(x) for x in environment_lines(read_jsonl(train))} if train.is_file() else set()
    found = set().union(*(environment_lines(read_jsonl(p)) for p in evaluated if p.is_file()))
    unseen = sorted(x for x in found if _toolchain_path(x) not in seen)
    return {"train": sorted(seen), "unseen": unseen, "same": not unseen}


def swap_partners(tasks: list[Task], expert: list[dict]) -> dict[str, list[str]]:
    """Task id -> the tool outputs another task's expert episode printed: the next task (in id order, cyclically)
    whose facts share no required value with this one's (other pass and fail counts, other failing tests), so that
    a copied fact can never be right by chance."""
    outputs = {r["task_id"]: [m["content"] for m in r["messages"] if m.get("role") == "tool"] for r in expert}
    ordered = sorted((t for t in tasks if outputs.get(t.id)), key=lambda t: t.id)
    values = {t.id: {(k, str(v)) for k, v in required_facts(t.task_type, t.facts)} for t in ordered}
    partners = {}
    for i, task in enumerate(ordered):
        others = ordered[i + 1 :] + ordered[:i]
        partner = next((o for o in others if not values[o.id] & values[task.id]), None)
        if partner is not None:
            partners[task.id] = outputs[partner.id]
    return partners


def _episode(task: Task, tasks_file: Path, policy, max_turns: int, sandbox: SandboxSpec,
             swap: list[str] | None = None) -> dict:  # fmt: skip
    # a task whose sandbox or setup fails ends its own episode (a `start_failed` record), not the summary
    policy = SwappedPolicy(policy, swap) if swap is not None else policy
    return run_episode(task, tasks_file, policy, sandbox=sandbox, max_turns=max_turns, fail_alone=True).to_dict()


def held_out(
    model: str,
    tasks_file: Path,
    out: Path,
    *,
    sandbox: SandboxSpec,
    max_turns: int,
    concurrency: int,
    split: str = "test",
    max_new_tokens: int = MAX_NEW_TOKENS,
    policy: str = "transformers",
    name: str | None = None,
    limit: int | None = None,
    task_ids: set[str] | None = None,
    swap: dict[str, list[str]] | None = None,
    per_task: bool = False,
) -> dict:
    """The model's greedy episodes on the `split` tasks (those of `task_ids`, or a seeded draw of `limit` of them,
    when given). With `swap` (`swap_partners`), on the tasks it holds, each reading another task's tool output.
    Besides the rates, where the facts were lost (`judge.facts.fact_path`): `p_command`, the share of episodes in
    which a command printed a required fact; `p_stated_given_printed`, the share of printed facts the answer
    stated. `per_task`: also each task's recall (`recall_per_task`), for intervals over tasks."""
    # what the training episodes saw: the pipeline's PATH (the venv first), whatever shell started this process;
    # a benchmark started from a plain shell once showed the host's pyenv shim in every held-out episode
    os.environ["PATH"] = harness_path()
    tasks = {t.id: t for t in load_tasks(tasks_file) if t.split == split and (task_ids is None or t.id in task_ids)}
    if not tasks:
        among = f" among {sorted(task_ids)}" if task_ids else ""
        raise TrainingInputError(f"{tasks_file} has no {split} tasks{among}")
    if swap is not None:
        tasks = {i: t for i, t in tasks.items() if i in swap}
    if limit is not None and limit < len(tasks):
        keep = random.Random(0).sample(sorted(tasks), limit)
        tasks = {i: tasks[i] for i in sorted(keep)}

    warm_imports()
    name = name or Path(model).name
    # made once, shared by the episodes (a served model only while its own episodes run)
    logs = out.parent / "logs"
    with shared_policy(policy, model, served_name=name, log_dir=logs, max_new_tokens=max_new_tokens) as shared:
        jobs = [(i, partial(_episode, t, tasks_file, shared, max_turns, sandbox, (swap or {}).get(i)))
                for i, t in sorted(tasks.items())]  # fmt: skip
        # keyed by its inputs: episodes of another model (trained again since) or task file are not this summary's;
        # the file is progress, not an output, so a finished one of other inputs is replaced rather than refused
        inputs = {
            "model": model_stamp(model),
            "tasks_sha256": file_sha256(tasks_file),
            "split": split,
            "max_turns": max_turns,
            "max_new_tokens": max_new_tokens,
            **({"swap_sha256": hashlib.sha256(json.dumps(swap, sort_keys=True).encode()).hexdigest()} if swap else {}),
        }
        stale = out.is_file() and bool(prov.differs(out, inputs))
        records = run_jobs(jobs, out, concurrency, True, f"held-out ({name})", provenance=inputs, force=stale)
    answered, usable, recalls, paths, by_task = [], [], [], [], {}
    infra = [r for r in records if start_failed(r)]  # no outcome of the model: out of its rates, and counted
    for r in records:
        if start_failed(r):
            continue
        task = tasks[r["task_id"]]
        answered.append(float(r["termination"] == "final_answer"))
        usable.append(float(usable_answer(r["final_answer"], [t["command"] for t in r["turns"]])))
        observed = observations_of(r["messages"])
        checked = check(r["final_answer"], task.facts, task.task_type, observed)
        recalls.append(checked.recall)
        by_task[r["task_id"]] = checked.recall
        paths.append(fact_path(r["final_answer"], task.facts, task.task_type, observed, checked))
    if not answered:
        raise TrainingInputError(f"no held-out episode of {name} started: {infra[0].get('error')}")
    return {
        "final_answer_rate": round(statistics.fmean(answered), 4),
        "usable_answer_rate": round(statistics.fmean(usable), 4),  # parsed, ran its commands, no markup
        "fact_recall": round(statistics.fmean(recalls), 4),
        "n": len(answered),
        **path_rates(paths),
        **({"recall_per_task": by_task} if per_task else {}),
    } | ({"infra_failed": len(infra)} if infra else {})


def path_rates(paths: list[dict]) -> dict:
    """`p_command` (episodes with a required fact printed) and `p_stated_given_printed` (printed facts stated)."""
    with_facts = [p for p in paths if p["required"]]
    printed = sum(p["printed"] for p in with_facts)
    return {
        "p_command": round(statistics.fmean(p["printed"] > 0 for p in with_facts), 4) if with_facts else None,
        "p_stated_given_printed": round(sum(p["stated_and_printed"] for p in with_facts) / printed, 4)
        if printed
        else None,
    }


def logged_steps(metrics: Path) -> list[dict]:
    """The rows of a GRPO metrics log that are training steps (they carry the reward)."""
    return [r for r in read_jsonl(metrics) if "reward" in r]


def reward_curve(metrics: Path) -> list[tuple[int, float]]:
    return [(r["step"], float(r["reward"])) for r in logged_steps(metrics)]


def training_summary(
    tasks_file: Path,
    models: dict[str, str],
    grpo_metrics: Path,
    out: Path,
    *,
    stamp: dict,
    sandbox: SandboxSpec,
    max_turns: int,
    concurrency: int,
    max_new_tokens: int = MAX_NEW_TOKENS,
    policy: str = "transformers",
    train_tasks: int = 0,
) -> dict:
    """Each model on the test split; with `train_tasks`, the SFT model also on that many of its training tasks
    (`sft.train_fact_recall`): a pipeline that cannot fit its own training tasks is broken, one that fits them but
    not the held-out ones is small."""
    summary: dict = {}
    # the same limits and policy for every model and split
    run = {"max_turns": max_turns, "max_new_tokens": max_new_tokens, "concurrency": concurrency, "sandbox": sandbox,
           "policy": policy}  # fmt: skip
    for name, model in models.items():
        summary[name] = held_out(model, tasks_file, out.parent / f"held_out_{name}.jsonl", name=name, **run)
    if train_tasks and "sft" in models:
        train = out.parent / "train_sft.jsonl"
        fitted = held_out(models["sft"], tasks_file, train, split="train", limit=train_tasks, name="sft", **run)
        summary["sft"].update(
            train_final_answer_rate=fitted["final_answer_rate"], train_fact_recall=fitted["fact_recall"],
            train_n=fitted["n"],
        )  # fmt: skip
    curve = reward_curve(grpo_metrics)
    if not curve:
        raise TrainingInputError(f"{grpo_metrics} holds no reward: did GRPO log any step?")
    k = max(1, len(curve) // 4)  # first and last quarter, so that one noisy step does not decide
    summary.setdefault("grpo", {}).update(
        reward_first=round(statistics.fmean(r for _, r in curve[:k]), 4),
        reward_last=round(statistics.fmean(r for _, r in curve[-k:]), 4),
        steps=curve[-1][0],
        reward_curve=[[s, round(r, 4)] for s, r in curve],
    )
    summary.update(stamp)
    write_json_atomic(out, summary)
    return summary
