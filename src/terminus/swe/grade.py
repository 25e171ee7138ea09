"""One grader for every family: the official rule, resolved iff every FAIL_TO_PASS and PASS_TO_PASS test passes.

In a fresh sandbox over the instance's environment (its image at `workdir`, or a clone of a local `repo_path`
at `base_commit`): apply the model patch; put the tests in place (SWE-Bench Pro: the last line of
`before_repo_set_cmd`; otherwise revert the files the test patch touches to `base_commit` and apply the test
patch, as SWE-bench's eval script does); run the test command; parse its log into per-test statuses. A test
the log does not mention counts as failed (SWE-bench's `test_failed`); a log with no test result at all is the
record's `error` (with the log's last lines), never silently "every test failed".
"""

from __future__ import annotations

import logging
import os
import posixpath
import re
import shlex
from dataclasses import dataclass
from pathlib import Path

from terminus.sandbox import Limits, Sandbox, SandboxError, SandboxSpec, hostfs
from terminus.settings import SWE_TIMEOUT_S
from terminus.swe import testlog
from terminus.swe.environment import instance_sandbox
from terminus.swe.gitops import GIT, apply_command, patch_from_tree, stage_text
from terminus.swe.parsers import PARSE_BUDGET_S, PASSING, ParserError, parse_log
from terminus.swe.patchcheck import file_changes, files_after, patch_problem
from terminus.swe.record import GradeError, GradeResult, RepairInstance
from terminus.swe.testids import normalise_test_id

log = logging.getLogger(__name__)

START, END = ">>>>> Start Test Output", ">>>>> End Test Output"
# Real test logs run to megabytes; they go to a file, read from the host up to LOG_CAP_BYTES (testlog), so the
# terminal's much smaller cap does not apply.
LOG_NAME = "terminus-swe-test.log"
RC_VAR = "__terminus_test_status"
NO_RESULT = "no test result in the log"
# Statuses of a command that never started: not found, not executable.
NOT_STARTED = {126: "not executable", 127: "command not found"}


def patch_files(patch: str) -> tuple[list[str], list[str]]:
    """(paths the patch finds at base: what it modifies, deletes, renames away or changes the mode of; paths it
    creates: new files, rename and copy targets). The test setup resets the first to `base_commit` (as the official
    harness resets a rename's source) and removes the second, so that the test patch applies after any model patch."""
    at_base: list[str] = []
    created: list[str] = []
    for change in file_changes(patch):
        if change.old and change.kind != "copy":
            at_base.append(change.old)
        if change.new and change.kind in ("add", "rename", "copy"):
            created.append(change.new)
    return list(dict.fromkeys(at_base)), list(dict.fromkeys(created))


def setup_tests_commands(inst: RepairInstance, workdir: str) -> list[str]:
    if inst.test_setup:
        return [f"cd {workdir} && {command}" for command in inst.test_setup]
    if not inst.test_patch.strip():
        return []
    modified, created = patch_files(inst.test_patch)
    steps = [f"cd {workdir}"]
    if modified:
        steps.append(f"{GIT} checkout {shlex.quote(inst.base_commit)} -- {' '.join(map(shlex.quote, modified))}")
    if created:
        steps.append(f"rm -f {' '.join(map(shlex.quote, created))}")
    reset = " && ".join(steps)
    return [reset, apply_command(inst.test_patch, workdir, "terminus-test.diff")]


def tests_command(inst: RepairInstance, workdir: str) -> str:
    """The test run, its whole log into $TMPDIR (read from the host, so no output cap cuts it)."""
    out = f'"${{TMPDIR:-/tmp}}/{LOG_NAME}"'
    prelude = "".join(f"{c} ; " for c in inst.pre_test)
    if inst.run_script and inst.parser_script:  # SWE-Bench Pro's official scripts decide the statuses
        t = '"${TMPDIR:-/tmp}"'
        run = (
            f"{stage_text('run_script.sh', inst.run_script)} && {stage_text('parser.py', inst.parser_script)} && "
            f"cd {workdir} && {{ {prelude}bash {t}/run_script.sh {shlex.quote(inst.meta.get('selected', ''))} "
            f"> {t}/stdout.log 2> {t}/stderr.log ; python3 {t}/parser.py {t}/stdout.log {t}/stderr.log "
            f"{t}/output.json ; echo '{START}' ; cat {t}/output.json ; echo '{END}' ; }} > {out} 2>&1"
        )
        return run
    # The test command's own exit status is the command's (127: it never started), not the closing echo's.
    return (
        f"cd {workdir} && {{ {prelude}echo '{START}' ; {inst.test_cmd} ; {RC_VAR}=$? ; echo '{END}' ; }} > {out} 2>&1"
        f" ; exit ${{{RC_VAR}:-$?}}"
    )


@dataclass
class TestRun:
    statuses: dict[str, str]
    log: str
    exit_code: int | None
    timed_out: bool
    parse_error: str | None = None  # the parser refused the log or passed its time budget: no statuses


def run_tests(
    box: Sandbox, inst: RepairInstance, workdir: str, timeout_s: float, parse_budget_s: float | None = PARSE_BUDGET_S
) -> TestRun:
    hostfs.unlink(box.host_tmp, LOG_NAME)
    result = box.run(tests_command(inst, workdir), timeout_s)
    try:
        text = testlog.read_log(box.host_tmp, LOG_NAME)
    except FileNotFoundError:
        text = result.output
    except hostfs.UnsafePathError as err:  # the tests replaced their log: what it points to is never read
        log.warning("%s: %s", inst.instance_id, err)
        text = f"{result.output}\n[terminus: the test log was refused: {err}]"
    if result.timed_out:
        text += f"\n[terminus: the test command timed out after {timeout_s:.0f} s]"
    begin = text.find(START)
    begin = 0 if begin < 0 else begin + len(START)
    end = text.rfind(END, begin)
    region = text[begin : len(text) if end < 0 else end]
    try:
        parsed = parse_log(inst.log_parser, region, parse_budget_s)
        statuses = {normalise_test_id(k): v for k, v in parsed.items()}
    except ParserError as err:  # a log no parse can read, or one that took past the budget: the grade says so
        log.warning("%s: %s", inst.instance_id, err)
        return TestRun({}, text, result.exit_code, result.timed_out, str(err))
    return TestRun(statuses, text, result.exit_code, result.timed_out)


def last_lines(text: str, count: int = 12, width: int = 1500) -> str:
    """The log's last non-empty lines (the harness's own markers left out), for an error record."""
    return testlog.last_lines(text, count, width, (START, END))


def no_result_error(box: Sandbox, run: TestRun) -> str:
    """Why a test run gave no result: a command that never started is the environment's fault; the log's last
    lines say the rest."""
    code = run.exit_code
    if run.parse_error:
        what = f"{NO_RESULT}: {run.parse_error}"
    elif run.timed_out:
        what = f"{NO_RESULT}: the test command timed out"
    elif code in NOT_STARTED:
        what = f"environment: the test command did not start (exit status {code}: {NOT_STARTED[code]}); {NO_RESULT}"
    else:
        what = f"{NO_RESULT} (exit status {code})"
    hidden = box.hidden_host_paths(run.log) if code in NOT_STARTED else []
    if hidden:
        what += (
            f"; {', '.join(hidden[:3])} exists on the host but is not visible in the bwrap sandbox (its /tmp and "
            "/home are private): bind it read-only with --bind PATH or the row's `binds`"
        )
    return f"{what}; the log ends:\n{last_lines(run.log)}"


# Files a traceback names: pytest's `path.py:12: in f` / `path.py:12: Error`, Python's `File "path.py", line 12`.
_TRACE_FILE = re.compile(r'(?m)^(\S+\.py):\d+:(?: |$)|File "([^"]+\.py)", line \d+')
# Distinct paths outside the workspace looked up in it (each costs a few system calls on the host).
_MAX_TRACE_FILES = 1000


def outside_workspace(box: Sandbox, inst: RepairInstance, text: str) -> list[str]:
    """Repository files that the log's tracebacks show imported from outside the workspace (an environment that
    installed the repository, editable or not, imports that unpatched copy): `outside path (= repo path)`.
    Local rows only: their workspace is the repository, readable from the host."""
    if not inst.repo_path:
        return []
    inside = {box.inside_workspace.rstrip("/"), os.path.realpath(box.inside_workspace).rstrip("/")}
    found: list[str] = []
    fixed = set(files_after(inst.gold_patch))
    seen: set[str] = set()
    for match in _TRACE_FILE.finditer(text):
        named = match.group(1) or match.group(2)
        full = posixpath.normpath(posixpath.join(box.inside_workspace, named))
        if full in seen or any(full == w or full.startswith(w + "/") for w in inside):
            continue
        seen.add(full)
        if len(seen) > _MAX_TRACE_FILES:  # a log of a million distinct paths: enough looked at
            break
        parts = full.strip("/").split("/")
        for k in range(len(parts) - 1, 0, -1):  # the longest tail of the path that is a file of the repository
            tail = "/".join(parts[-k:])
            if (k >= 2 or tail in fixed) and hostfs.is_file(box.workspace, tail):
                found.append(f"{full} (= {tail})")
                break
    return list(dict.fromkeys(found))


def judge(inst: RepairInstance, statuses: dict[str, str]) -> GradeResult:
    def passed(test: str) -> bool:
        return statuses.get(normalise_test_id(test)) in PASSING

    result = GradeResult(inst.instance_id, resolved=False, statuses=statuses)
    for test in inst.fail_to_pass:
        (result.f2p_passed if passed(test) else result.f2p_failed).append(test)
    for test in inst.pass_to_pass:
        (result.p2p_passed if passed(test) else result.p2p_failed).append(test)
    result.resolved = bool(inst.fail_to_pass or inst.pass_to_pass) and not result.f2p_failed and not result.p2p_failed
    return result


def _not_run(inst: RepairInstance, error: str, applied: bool, log_text: str = "") -> GradeResult:
    return GradeResult(
        inst.instance_id,
        resolved=False,
        f2p_failed=list(inst.fail_to_pass),
        p2p_failed=list(inst.pass_to_pass),
        patch_applied=applied,
        error=error,
        log=log_text,
    )


def grade_in_sandbox(
    box: Sandbox,
    inst: RepairInstance,
    workdir: str,
    patch: str | None,
    timeout_s: float = float(SWE_TIMEOUT_S),
    parse_budget_s: float | None = PARSE_BUDGET_S,
) -> GradeResult:
    """Apply `patch`, put the tests in place, run and judge them, in a sandbox at the base commit."""
    problem = patch_problem(patch)
    if problem:
        return _not_run(inst, problem, False)
    if patch and patch.strip():
        applied = box.run(apply_command(patch if patch.endswith("\n") else patch + "\n", workdir), 300)
        if applied.exit_code != 0:
            return _not_run(inst, "the patch does not apply", False, applied.output)
    for command in setup_tests_commands(inst, workdir):
        done = box.run(command, 600)
        if done.exit_code != 0:
            return _not_run(inst, f"test setup failed: {done.output.strip()[-300:]}", True, done.output)
    run = run_tests(box, inst, workdir, timeout_s, parse_budget_s)
    result = judge(inst, run.statuses)
    result.log = run.log
    if not run.statuses:
        result.error = no_result_error(box, run)
    elif not result.resolved:
        result.outside_workspace = outside_workspace(box, inst, run.log)
        if result.outside_workspace:
            log.info(
                "%s: the tests imported %s from outside the workspace: its test_cmd does not test the patched tree",
                inst.instance_id,
                result.outside_workspace[0],
            )
    return result


def grade_patch(
    inst: RepairInstance,
    patch: str | None,
    spec: SandboxSpec,
    *,
    timeout_s: float = float(SWE_TIMEOUT_S),
    limits: Limits | None = None,
    parse_budget_s: float | None = PARSE_BUDGET_S,
) -> GradeResult:
    """Grade one prediction (a unified diff against `base_commit`; None or "" is the empty patch) in a fresh sandbox
    of `spec` (the run's; the instance brings its image and binds: `instance_sandbox`). A patch that is
    not text, or names a path outside the work tree or in .git/, is the prediction's error, found before any
    sandbox starts."""
    problem = patch_problem(patch)
    if problem:
        return _not_run(inst, problem, False)
    try:
        with instance_sandbox(inst, spec, limits) as (box, workdir):
            return grade_in_sandbox(box, inst, workdir, patch, timeout_s, parse_budget_s)
    except (SandboxError, GradeError) as err:
        return _not_run(inst, f"environment: {err}", False)
    except Exception as err:  # e.g. the Docker engine refuses the image: a broken environment, not a wrong patch
        log.warning("%s: the environment failed: %s", inst.instance_id, err)
        return _not_run(inst, f"environment: {type(err).__name__}: {err}", False)


def grade_tree(inst: RepairInstance, tree: Path, spec: SandboxSpec, **kwargs) -> GradeResult:
    """Grade an edited working tree of a local-repository instance (a clone of `repo_path`)."""
    return grade_patch(inst, patch_from_tree(Path(tree), inst.base_commit), spec, **kwargs)
