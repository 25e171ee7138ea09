"""Validation of real instances in their environment, before anything trains or is graded on them:
at base + test patch every FAIL_TO_PASS test fails and every PASS_TO_PASS test passes; with the gold patch they
all pass. Instances where this does not hold (flaky tests, broken images, wrong expectations) are dropped and
counted, as registry mutants are."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import time
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from pathlib import Path

from terminus.collect import provenance as prov
from terminus.collect.runner import run_jobs
from terminus.errors import TerminusError
from terminus.io import drop_report
from terminus.sandbox import Limits, SandboxSpec
from terminus.settings import SWE_TIMEOUT_S
from terminus.swe.environment import instance_sandbox
from terminus.swe.grade import NO_RESULT, grade_in_sandbox
from terminus.swe.record import GradeResult, RepairInstance

log = logging.getLogger(__name__)
ENVIRONMENT = "environment:"


class EnvironmentDropError(TerminusError, RuntimeError):
    """Too many instances dropped for their environment (images absent or unpullable, sandboxes that do not start):
    the node, not the dataset, is at fault, and a corpus built without them would silently be a different one."""


def check_environment_drops(report: dict, max_share: float, where: str) -> None:
    """EnvironmentDropError when more than `max_share` of the validated instances dropped for environment reasons
    (`report` is `validate_instances`'), naming the count and the first reasons; `where` names the full report."""
    total = report.get("instances") or 0
    reasons = [r for r in (report.get("reasons") or {}).values() if r.startswith(ENVIRONMENT)]
    if not total or len(reasons) <= max_share * total:
        return
    first = "; ".join(list(dict.fromkeys(r.removeprefix(ENVIRONMENT).strip()[:200] for r in reasons))[:3])
    raise EnvironmentDropError(
        f"{len(reasons)} of {total} SWE instances dropped for environment reasons, over the allowed "
        f"{max_share:.0%} (tasks.swe.max_environment_drop); first reasons: {first}. Fix the node (pre-pull the "
        f"images: `terminus swe pull`; check docker) and run the stage again; every reason is in {where}"
    )


def grade_both(
    inst: RepairInstance,
    spec: SandboxSpec,
    timeout_s: float = float(SWE_TIMEOUT_S),
    limits: Limits | None = None,
) -> tuple[GradeResult, GradeResult]:
    """(the empty patch's grade: base + test patch; the gold patch's grade), each in a fresh sandbox."""
    with instance_sandbox(inst, spec, limits) as (box, workdir):
        before = grade_in_sandbox(box, inst, workdir, "", timeout_s)
    with instance_sandbox(inst, spec, limits) as (box, workdir):
        after = grade_in_sandbox(box, inst, workdir, inst.gold_patch, timeout_s)
    return before, after


def check_instance(
    inst: RepairInstance,
    spec: SandboxSpec,
    timeout_s: float = float(SWE_TIMEOUT_S),
    limits: Limits | None = None,
) -> tuple[str | None, dict]:
    """(why the instance is dropped, or None; what was observed). Each run is in a fresh sandbox."""
    observed: dict = {}
    try:
        before, after = grade_both(inst, spec, timeout_s, limits)
    except Exception as err:  # an environment that cannot even start is a reason to drop, not to stop
        return f"{ENVIRONMENT} {type(err).__name__}: {err}", observed
    observed = {"before": _summary(before), "after": _summary(after)}
    return drop_reason(before, after), observed


def drop_reason(before: GradeResult, after: GradeResult) -> str | None:
    """Why the instance is dropped: the environment's faults first (a test command that never started, no test
    result with the gold patch, tests importing another copy of the repository), then the dataset's."""
    for label, run in (("with the gold patch", after), ("at base + test patch", before)):
        if run.error and run.error.startswith(ENVIRONMENT):
            return f"{ENVIRONMENT} {label}: {run.error.removeprefix(ENVIRONMENT).strip()}"
    if not after.resolved and after.outside_workspace:
        return (
            f"{ENVIRONMENT} with the gold patch the tests imported the repository from outside the workspace "
            f"({after.outside_workspace[0]}): the environment has its own copy installed; make test_cmd import the "
            "workspace (docs/use.md: local rows)"
        )
    if after.error and NO_RESULT in after.error:  # the gold patch must pass its tests: nothing ran them
        return f"{ENVIRONMENT} with the gold patch: {after.error}"
    # No result at base alone is a build that fails before the fix (compiled languages): every test failed.
    if before.error and NO_RESULT not in before.error:
        return f"at base + test patch: {before.error}"
    if before.f2p_passed:
        return f"FAIL_TO_PASS passes at base + test patch: {', '.join(before.f2p_passed[:5])}"
    if before.p2p_failed:
        return f"PASS_TO_PASS fails at base + test patch: {', '.join(before.p2p_failed[:5])}"
    if after.error:
        return f"with the gold patch: {after.error}"
    if not after.resolved:
        failed = after.f2p_failed + after.p2p_failed
        return f"with the gold patch these tests still fail: {', '.join(failed[:5])}"
    return None


def _summary(result: GradeResult) -> dict:
    return {
        "resolved": result.resolved,
        "error": result.error,
        "patch_applied": result.patch_applied,
        "outside_workspace": result.outside_workspace,
        "statuses": result.statuses,
    }


def _checked(
    instances: list[RepairInstance],
    spec: SandboxSpec,
    timeout_s: float,
    limits: Limits | None,
    concurrency: int,
    progress: Path,
) -> list[tuple[str | None, dict]]:
    """check_instance's outcomes, through a resumable progress file (see validate_instances)."""

    def one(inst: RepairInstance) -> dict:
        start = time.perf_counter()
        reason, observed = check_instance(inst, spec, timeout_s, limits)
        duration = round(time.perf_counter() - start, 3)  # to the timings sidecar, not the record
        return {"instance_id": inst.instance_id, "reason": reason, "observed": observed, "duration_s": duration}

    described = json.dumps([i.to_dict() for i in instances], sort_keys=True, default=str)
    inputs = {
        "instances_sha256": hashlib.sha256(described.encode()).hexdigest()[:16],
        "sandbox": json.loads(json.dumps(dataclasses.asdict(spec), sort_keys=True)),
        "timeout_s": timeout_s,
        "limits": repr(limits),
    }
    jobs = [(i.instance_id, partial(one, i)) for i in instances]
    records = run_jobs(
        jobs, progress, concurrency, False, "validate", key="instance_id", provenance=inputs, retry_failed=False
    )
    by_id = {r["instance_id"]: r for r in records}
    # Published in the report by the caller: a later run checks again (an environment fixed since then counts).
    # The timings sidecar (<progress-stem>.timings.jsonl, wall clock) stays.
    for path in (progress, prov.sidecar(progress)):
        path.unlink(missing_ok=True)
    return [(by_id[i.instance_id]["reason"], by_id[i.instance_id]["observed"]) for i in instances]


def validate_instances(
    instances: list[RepairInstance],
    spec: SandboxSpec,
    *,
    concurrency: int,
    timeout_s: float = float(SWE_TIMEOUT_S),
    limits: Limits | None = None,
    progress: Path | None = None,
) -> tuple[list[RepairInstance], dict]:
    """The instances that hold, and a report: counts, and the reason for every dropped instance. Each instance runs
    in sandboxes of `spec` (the run's), in its own environment (`instance_sandbox`).

    `progress`: a JSON-lines file of each instance's outcome as it is checked (`terminus.collect.runner.run_jobs`:
    kept through a kill, keyed by the instances and the environment), so that a stage cut off at its slurm time
    limit and run again checks only the instances it had not."""
    if progress is None:
        with ThreadPoolExecutor(max_workers=max(1, concurrency)) as pool:
            outcomes = list(pool.map(lambda i: check_instance(i, spec, timeout_s, limits), instances))
    else:
        outcomes = _checked(instances, spec, timeout_s, limits, concurrency, Path(progress))
    kept, dropped, observed = [], {}, {}
    for inst, (reason, seen) in zip(instances, outcomes, strict=True):
        observed[inst.instance_id] = seen
        if reason is None:
            kept.append(inst)
        else:
            log.info("dropping %s: %s", inst.instance_id, reason)
            dropped[inst.instance_id] = reason
    report = drop_report(
        "instances",
        instances,
        len(kept),
        dropped,
        lambda i: i.instance_id,
        family=lambda i: i.family,
        language=lambda i: i.language,
    )
    # The environment's faults (fix the environment, keep the row) apart from the dataset's (drop the row).
    environment = sum(reason.startswith(ENVIRONMENT) for reason in dropped.values())
    report["dropped_by_cause"] = {"environment": environment, "instance": len(dropped) - environment}
    report["observed"] = observed
    return kept, report
