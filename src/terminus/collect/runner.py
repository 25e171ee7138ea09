"""Episodes over tasks: one sandbox per episode, N at once, results in a JSON-lines file that survives kill -9.

Records are appended to `<out>.part` as each episode ends (one line, flushed and fsynced). A rerun reads the
complete lines of the part file, runs only the missing keys, then writes `<out>` sorted by key, atomically.
A record counts as done only if its episode finished: `crash` records and endpoint failures (`error`) are run
again unless `retry_failed` is off, and the part file is kept while any record failed (a caller that deletes
`<out>` on failure loses nothing). `<out-stem>.provenance.json` says what produced the records; a rerun with
other inputs is refused unless `force` discards them (`provenance`), except when only the part file is there: that
is progress, not a result, and progress of other inputs is discarded (a Snakemake rule rerun because an input
changed starts afresh; one resubmitted after its slurm time limit, same inputs, resumes).

This is how a stage longer than one slurm job keeps its work: Snakemake deletes a failed job's declared outputs
(`<out>`), never the part, timings and provenance files beside them, which are no outputs.
Wall-clock measurements go to `<out-stem>.timings.jsonl` (appended to its own `.part` as episodes end, so a
resume keeps them all), so that a deterministic teacher's records are byte-identical whether or not the run
was interrupted.
"""

from __future__ import annotations

import json
import logging
import os
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path

from terminus.agent.loop import AgentConfig, ExecutionSubagent
from terminus.agent.trajectory import Trajectory
from terminus.collect import provenance as prov
from terminus.io import read_jsonl, write_jsonl_atomic
from terminus.sandbox import SandboxError, SandboxSpec, make_sandbox
from terminus.tasks.record import Task, TaskFileError

log = logging.getLogger(__name__)


class TaskStartError(SandboxError):
    """A task's sandbox did not start or its setup failed: nothing the policy did, so no outcome of the policy."""


def run_episode(
    task: Task,
    tasks_file: Path,
    policy,
    *,
    sandbox: SandboxSpec,
    max_turns: int,
    trajectory_id: str | None = None,
    query: str | None = None,
    parent_id: str | None = None,
    fail_alone: bool = False,
) -> Trajectory:
    """One subagent episode on a task's snapshot, in the run's sandbox; manifest tasks run their setup first, in
    their own image (`SandboxSpec.for_task`).

    A sandbox that fails to start, or a setup command that fails, raises TaskStartError; with `fail_alone` (GRPO's
    rollouts, where one broken task must not end the batch) it ends this episode alone instead: a `crash` record
    whose error names TaskStartError (`start_failed`)."""
    ident = trajectory_id or task.id
    try:
        box = make_sandbox(sandbox.for_task(task.image), task.workspace_path(tasks_file))
    except SandboxError as err:
        return _start_failed(task, ident, parent_id, policy, sandbox, f"its sandbox did not start: {err}", fail_alone)
    with box:
        for command in task.setup:
            try:
                result = box.run(command, 1800)
            except SandboxError as err:
                return _start_failed(task, ident, parent_id, policy, sandbox, f"setup `{command}`: {err}", fail_alone)
            if result.exit_code != 0:
                why = f"setup `{command}` failed with exit code {result.exit_code}"
                return _start_failed(task, ident, parent_id, policy, sandbox, why, fail_alone)
        agent = ExecutionSubagent(policy, box, AgentConfig(max_turns=max_turns))
        return agent.run(
            query or task.query,
            task.description,
            task_id=task.id,
            trajectory_id=ident,
            parent_id=parent_id,
        )


def _start_failed(task: Task, ident: str, parent_id, policy, sandbox: SandboxSpec, why: str, alone: bool):
    err = TaskStartError(f"task {task.id}: {why}")
    if not alone:
        raise err
    log.warning("episode %s: %s", ident, err)
    traj = Trajectory(
        id=ident, task_id=task.id, parent_id=parent_id, policy=getattr(policy, "name", ""), query=task.query,
        description=task.description, backend=sandbox.backend or "",
    )  # fmt: skip
    traj.termination, traj.error = "crash", f"{type(err).__name__}: {err}"
    return traj


def start_failed(record: dict) -> bool:
    """The episode never started: its sandbox or its task setup failed (`run_episode(..., fail_alone=True)`)."""
    return record.get("termination") == "crash" and (record.get("error") or "").startswith("TaskStartError:")


def check_workspaces(tasks: list[Task], tasks_file: Path) -> None:
    """Every task's snapshot exists, checked before anything runs or is written."""
    for task in tasks:
        path = task.workspace_path(tasks_file)
        if path is not None and not path.is_dir():
            raise TaskFileError(
                f"{tasks_file}: task {task.id}: its workspace {path} does not exist (rebuild the "
                "corpus with `terminus tasks build`; repos/ stays next to the task file)"
            )


def split_timings(record: dict, key: str = "id") -> tuple[dict, dict]:
    """The deterministic record and its measurements (per-turn durations; a record's own `duration_s`)."""
    record = json.loads(json.dumps(record))
    durations = []
    for turn in record.get("turns", []):
        durations.append(turn.get("duration_s"))
        turn["duration_s"] = 0.0
    timing = {"id": record.get(key), "durations_s": durations}
    if "duration_s" in record:
        timing["duration_s"] = record.pop("duration_s")
    return record, timing


def failed(record: dict) -> bool:
    """The episode did not finish: it crashed, or an endpoint or sandbox failed under it."""
    return record.get("termination") == "crash" or bool(record.get("error"))


class ResumableJsonl:
    """Keyed records in `<out>.part` until `finish()` writes `<out>` sorted by key."""

    def __init__(
        self,
        out: Path,
        key: str = "id",
        *,
        provenance: dict | None = None,
        force: bool = False,
        retry_failed: bool = True,
    ) -> None:
        self.out = Path(out)
        self.part = self.out.with_name(self.out.name + ".part")
        self.timings = self.out.with_name(self.out.stem + ".timings.jsonl")
        self.timings_part = self.timings.with_name(self.timings.name + ".part")
        self.key = key
        self.retry_failed = retry_failed
        if force:
            for path in (self.out, self.part, self.timings, self.timings_part):
                path.unlink(missing_ok=True)
        self.lock = threading.Lock()
        self.records: dict[str, dict] = {}
        self.times: dict[str, dict] = {}
        if self.out.is_file():  # a finished run: keep it; new keys are appended through the part file
            self.records = {r[key]: r for r in read_jsonl(self.out, required=(key,))}
        if self.part.is_file():  # a kill -9 may have cut its last line: that episode runs again
            self.records |= {r[key]: r for r in read_jsonl(self.part, required=(key,), torn_tail=True)}
        for timings in (self.timings, self.timings_part):  # the finished file, then what a killed run appended
            if timings.is_file():
                self.times |= {t["id"]: t for t in read_jsonl(timings, required=("id",), torn_tail=True)}
        if provenance is not None:
            changed = prov.differs(self.out, provenance) if self.records and not self.out.is_file() else ""
            if changed:
                # Progress only (no finished output beside it, as after Snakemake deleted a failed job's outputs),
                # made from other inputs: the stage is being rerun because an input changed, so it starts afresh.
                # A finished output of other inputs is a result, and is refused below.
                log.warning("%s: progress made from other inputs (%s); starting afresh", self.part, changed)
                self.records, self.times = {}, {}
                self.timings_part.unlink(missing_ok=True)
            prov.check_or_write(self.out, provenance, has_records=bool(self.records))
        self.part.parent.mkdir(parents=True, exist_ok=True)
        self._rewrite_part()
        self._fh = open(self.part, "a")  # noqa: SIM115 - kept open for the run, closed in finish()
        write_jsonl_atomic(self.timings_part, [self.times[k] for k in sorted(self.times)])
        self._times_fh = open(self.timings_part, "a")  # noqa: SIM115 - as above

    def _rewrite_part(self) -> None:
        """Drop a torn last line so that appends start on a fresh line."""
        write_jsonl_atomic(self.part, [self.records[k] for k in sorted(self.records)])

    def done(self, key: str) -> bool:
        record = self.records.get(key)
        return record is not None and not (self.retry_failed and failed(record))

    def add(self, record: dict, timing: dict | None = None) -> None:
        line = json.dumps(record, ensure_ascii=False, sort_keys=True)
        with self.lock:
            # The timing first: a kill between the two writes then leaves a timing whose episode runs again (and
            # replaces it), never a finished episode whose timing is lost.
            if timing is not None:
                self.times[record[self.key]] = timing
                self._times_fh.write(json.dumps(timing, sort_keys=True) + "\n")
                self._times_fh.flush()
            self._fh.write(line + "\n")
            self._fh.flush()
            os.fsync(self._fh.fileno())
            # as a resumed run reads it back (keys sorted), so that callers see the same records either way
            self.records[record[self.key]] = json.loads(line)

    def close(self) -> None:
        self._fh.close()
        self._times_fh.close()

    def finish(self) -> list[dict]:
        self.close()
        ordered = [self.records[k] for k in sorted(self.records)]
        write_jsonl_atomic(self.out, ordered)
        times = [self.times[k] for k in sorted(self.times) if k in self.records]
        if times:
            write_jsonl_atomic(self.timings, times)
        if not any(failed(r) for r in ordered):  # else kept: a caller that deletes `out` on failure (Snakemake
            self.part.unlink(missing_ok=True)  # does, on a non-zero exit) loses no finished episode
            self.timings_part.unlink(missing_ok=True)
        return ordered


def _gather(jobs: list[tuple[str, Callable[[], dict]]], store: ResumableJsonl, concurrency: int, bar) -> None:
    """The jobs on `concurrency` threads (the pool is the only bound needed), each record stored as its job ends.
    A job that raises ends the run: jobs not yet started are cancelled; what was stored stays in the part file."""
    with ThreadPoolExecutor(max_workers=concurrency, thread_name_prefix="episode") as pool:
        futures = [pool.submit(job) for _, job in jobs]
        try:
            for future in as_completed(futures):
                clean, timing = split_timings(future.result(), store.key)
                store.add(clean, timing)
                bar()
        except BaseException:
            for future in futures:
                future.cancel()
            raise


def run_jobs(
    jobs: list[tuple[str, Callable[[], dict]]],
    out: Path,
    concurrency: int,
    show_progress: bool = True,
    label: str = "episodes",
    key: str = "id",
    *,
    provenance: dict | None = None,
    force: bool = False,
    retry_failed: bool = True,
) -> list[dict]:
    """Run the jobs that have no finished record in `out` yet, `concurrency` at a time; returns the file's
    records, sorted (see the module doc for provenance, force and retry_failed)."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    store = ResumableJsonl(out, key, provenance=provenance, force=force, retry_failed=retry_failed)
    todo = [(k, j) for k, j in jobs if not store.done(k)]
    if len(todo) < len(jobs):
        log.info("%d of %d %s already done; running the other %d", len(jobs) - len(todo), len(jobs), label, len(todo))
    columns = (TextColumn(f"[bold]{label}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    try:
        with Progress(*columns, disable=not show_progress) as progress:
            bar = progress.add_task(label, total=len(jobs), completed=len(jobs) - len(todo))
            _gather(todo, store, concurrency, lambda: progress.advance(bar))
    except BaseException:
        store.close()  # what finished stays in the part files for the next run
        raise
    return store.finish()
