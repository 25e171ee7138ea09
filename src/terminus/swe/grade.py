"""One grader for every family: the official rule, resolved iff every FAIL_TO_PASS and PASS_TO_PASS test passes.

In a fresh sandbox over the instance's environment (its image at `workdir`, or a clone of a local `repo_path`
at `base_commit`): apply the model patch; put the tests in place (SWE-Bench Pro: the last line of
`before_repo_set_cmd`; otherwise revert the files the test patch touches to `base_commit` and apply the test
patch, as SWE-bench's eval script does); run the test command; parse its log into per-test statuses. A test
the log does not mention counts as failed (SWE-bench's `test_failed`); a log with no test result at all is the
record's `error` (with the log's last lines), never silently "every test failed".
"""

from __future__ import annotations

import base64
import contextlib
import logging
import os
import posixpath
import re
import shlex
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from terminus.errors import TerminusError
from terminus.sandbox import Limits, Sandbox, SandboxError, SandboxSpec, fdtree, hostfs, make_sandbox
from terminus.sandbox.docker import HOST_BINDS, HOST_IMAGE
from terminus.sandbox.tmproot import run_root
from terminus.swe import testlog
from terminus.swe.history import hide_history
from terminus.swe.parsers import PARSE_BUDGET_S, PASSING, ParserError, normalise_test_id, parse_log
from terminus.swe.patchcheck import file_changes, files_after, patch_problem
from terminus.swe.record import GradeResult, RepairInstance

log = logging.getLogger(__name__)

START, END = ">>>>> Start Test Output", ">>>>> End Test Output"
LOG_NAME = "terminus-swe-test.log"
RC_VAR = "__terminus_test_status"
NO_RESULT = "no test result in the log"
# Statuses of a command that never started: not found, not executable.
NOT_STARTED = {126: "not executable", 127: "command not found"}
# Real test logs run to megabytes; they go to a file, read from the host up to LOG_CAP_BYTES (testlog), so the
# terminal's much smaller cap does not apply.
# Inside a user namespace the copied repository belongs to another uid; git refuses such "dubious ownership"
# unless told the directory is safe. A workspace that a patch or a model touched may hold hooks or an fsmonitor
# command in its .git/: every git in the sandbox (the dataset's own setup commands too) runs with neither, since
# these command-scope settings win over the repository's config.
GIT_CONFIG = {"safe.directory": "*", "core.hooksPath": "/dev/null", "core.fsmonitor": "false"}
GIT_SAFE = {"GIT_CONFIG_COUNT": str(len(GIT_CONFIG))} | {
    f"GIT_CONFIG_{kind}_{i}": text
    for i, pair in enumerate(GIT_CONFIG.items())
    for kind, text in zip(("KEY", "VALUE"), pair, strict=True)
}
# The same, spelled out, for the grader's own git commands (they also run under limits that lack GIT_SAFE, such as
# the eval's agent sandbox); command-scope config is "protected", so git honours safe.directory there.
GIT = "git " + " ".join(f"-c {shlex.quote(f'{key}={value}')}" for key, value in GIT_CONFIG.items())
LIMITS = Limits(address_space_mb=None, cpu_time_s=None, max_timeout_s=4 * 3600.0, extra_env=GIT_SAFE)


def grading_limits(**env: str) -> Limits:
    """The grader's limits with extra environment variables (e.g. a PATH that reaches a toolchain)."""
    return Limits(address_space_mb=None, cpu_time_s=None, max_timeout_s=4 * 3600.0, extra_env={**GIT_SAFE, **env})


class GradeError(TerminusError, RuntimeError):
    pass


def _git(*args: str, cwd: Path | None = None) -> str:
    done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        raise GradeError(f"`git {' '.join(args)}` failed: {done.stderr.strip()[-400:]}")
    return done.stdout


def checkout(repo_path: str, commit: str, dest: Path, *, hide_future: bool = False) -> Path:
    """A clone of a local repository at `commit` (the sandbox copies it; the user's repository is untouched).

    `hide_future`: a repository of that one commit (`base_git`), as SWE-bench's images hold, so that an agent
    cannot read the fix from history. Grading keeps everything: SWE-Bench Pro's test setup checks the test files
    out of the fix commit."""
    if not Path(repo_path, ".git").exists():
        raise GradeError(f"repo_path {repo_path} is not a git repository")
    if hide_future:
        dest.mkdir(parents=True)
        base_git(repo_path, commit, dest)
        _git("reset", "--quiet", "--hard", cwd=dest)
        return dest
    _git("clone", "--quiet", "--no-hardlinks", repo_path, str(dest))
    _git("-c", "advice.detachedHead=false", "checkout", "--quiet", commit, cwd=dest)
    return dest


def base_git(repo_path: str, commit: str, tree: Path) -> None:
    """Give `tree` a new .git that holds `commit` alone: a shallow fetch of that one commit (its hash kept, its
    history, branches, tags, remote and every later commit left out), HEAD detached at it and the index at its
    tree; the files of `tree` are left as they are. A snapshot so made is the size of one tree, and `git log
    --all` in it shows one commit."""
    source = Path(repo_path).resolve()
    try:
        commit = _git("rev-parse", "--verify", "--quiet", f"{commit}^{{commit}}", cwd=source).strip()  # full hash
    except GradeError:
        raise GradeError(f"commit {commit} is not in the repository {repo_path}") from None
    shutil.rmtree(tree / ".git", ignore_errors=True)
    _git("init", "--quiet", "--template=", str(tree))
    _git("fetch", "--quiet", "--no-tags", "--depth=1", str(source), commit, cwd=tree)
    _git("update-ref", "--no-deref", "HEAD", commit, cwd=tree)
    _git("read-tree", "HEAD", cwd=tree)
    (tree / ".git" / "FETCH_HEAD").unlink(missing_ok=True)


def sandbox_options(inst: RepairInstance, backend: str | None, options: dict | None = None) -> dict:
    """Backend options for an instance: its image for docker/apptainer (a local repository under docker gets the
    registry-free host image, which borrows the host's toolchains); the row's and the run's read-only `binds`
    (bwrap hides the host's /tmp and /home; docker sees nothing of the host unless bound)."""
    options = dict(options or {})
    binds = [*inst.binds, *(options.pop("binds", None) or [])]
    if backend == "apptainer":
        image = options.pop("image", None) or inst.image
        if not image:
            raise GradeError(f"{inst.instance_id}: apptainer needs an image (the row has none; pass one in options)")
        options["image"] = image if "://" in image or image.endswith(".sif") else f"docker://{image}"
    elif backend == "docker":
        options.setdefault("image", inst.image or HOST_IMAGE)
        own = [b if ":" in b else f"{b}:{b}:ro" for b in binds]
        if options["image"] == HOST_IMAGE:
            own = [*HOST_BINDS, *own]
        if own:
            options["binds"] = list(dict.fromkeys(own))
    elif backend == "bwrap" and binds:
        options["binds"] = list(dict.fromkeys(binds))
    return options


@contextlib.contextmanager
def instance_sandbox(
    inst: RepairInstance,
    backend: str | None,
    options: dict | None = None,
    limits: Limits | None = None,
    *,
    for_agent: bool = False,
) -> Iterator[tuple[Sandbox, str]]:
    """A sandbox over the instance at its base commit, and the shell expression of its repository folder.
    `for_agent`: the repository's later history is removed (what the main agent works in): a local repository's on
    the host (`base_git`), an image's inside the container as it starts (`history.hide_history`). Grading's own
    sandboxes keep it."""
    options = sandbox_options(inst, backend, options)
    spec = SandboxSpec(backend, options.pop("image", None), tuple(options.pop("binds", None) or ()))
    if inst.repo_path:
        # Under this process's run root, so that the next terminus process removes it if this one is killed.
        scratch = Path(tempfile.mkdtemp(prefix="terminus-swe-", dir=run_root()))
        try:
            source = checkout(inst.repo_path, inst.base_commit, scratch / "repo", hide_future=for_agent)
            with make_sandbox(spec, source, limits or LIMITS, **options) as box:
                yield box, '"$TERMINUS_WORKSPACE"'
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
    else:
        if backend not in ("docker", "apptainer"):
            raise GradeError(
                f"{inst.instance_id} runs in image {inst.image}: use --sandbox docker or apptainer "
                "(local and bwrap need a row with repo_path)"
            )
        with make_sandbox(spec, None, limits or LIMITS, **options) as box:
            workdir = shlex.quote(inst.workdir or "/")
            if for_agent:
                done = box.run(hide_history(workdir, inst.base_commit), 600)
                if done.exit_code != 0:
                    raise GradeError(
                        f"{inst.instance_id}: hiding the history after the base commit failed: "
                        f"{done.output.strip()[-300:]}"
                    )
            yield box, workdir


def host_tmp(box: Sandbox) -> Path:
    """The sandbox's /tmp as seen from the host: every backend binds its workspace's tmp folder there."""
    ws = getattr(box, "ws", None)
    if ws is None:
        raise SandboxError(f"{type(box).__name__} has no host-visible tmp folder")
    return Path(ws.tmp)


def _stage(name: str, text: str) -> str:
    """A shell step that writes `text` to $TMPDIR/name byte for byte (base64: no quoting or heredoc pitfalls)."""
    data = base64.b64encode(text.encode()).decode()
    return f'printf %s {data} | base64 -d > "${{TMPDIR:-/tmp}}/{name}"'


def apply_command(patch: str, workdir: str, name: str = "terminus-model.diff") -> str:
    """git apply, else GNU patch (as SWE-bench's harness does); a patch naming a path outside the work tree or in
    its .git/ never reaches either (GradeError)."""
    problem = patch_problem(patch)
    if problem:
        raise GradeError(problem)
    target = f'"${{TMPDIR:-/tmp}}/{name}"'
    return (
        f"cd {workdir} && {_stage(name, patch)} && "
        f"{{ {GIT} apply -v --whitespace=nowarn {target} || patch --batch --fuzz=5 -p1 -i {target}; }}"
    )


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
            f"{_stage('run_script.sh', inst.run_script)} && {_stage('parser.py', inst.parser_script)} && "
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


def read_sandbox_file(box: Sandbox, name: str) -> bytes:
    """A file the sandbox wrote in its /tmp, read from the host without following a link the sandbox planted there
    (hostfs): FileNotFoundError when absent, UnsafePathError for a link or anything but a regular file."""
    return hostfs.read_bytes(host_tmp(box), name)


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
    hostfs.unlink(host_tmp(box), LOG_NAME)
    result = box.run(tests_command(inst, workdir), timeout_s)
    try:
        text = testlog.read_log(host_tmp(box), LOG_NAME)
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


# A path a shell or an exec names: "bash: /home/u/venv/bin/python: No such file or directory".
_PRIVATE_PATH = re.compile(r"(?<![\w.~/-])(/(?:tmp|home)/[^\s:'\"`;,)]+)")


def invisible_paths(box: Sandbox, text: str) -> list[str]:
    """Host paths under /tmp or /home that a failed command needed and bwrap hides (its /tmp and /home are
    private): those the log names that exist on the host, and PATH entries there."""
    if getattr(box, "name", "") != "bwrap":
        return []
    bound = {b.partition(":")[0] for b in getattr(box, "binds", [])}
    named = [p for p in _PRIVATE_PATH.findall(text) if Path(p).exists()]
    path_var = box.env().get("PATH", "") if hasattr(box, "env") else ""
    on_path = [p for p in path_var.split(":") if _PRIVATE_PATH.fullmatch(p) and Path(p).is_dir()]
    hidden = [p for p in dict.fromkeys(named + on_path) if not any(p == b or p.startswith(b + "/") for b in bound)]
    return hidden


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
    hidden = invisible_paths(box, run.log) if code in NOT_STARTED else []
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
    ws = getattr(box, "ws", None)
    if not inst.repo_path or ws is None:
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
            if (k >= 2 or tail in fixed) and hostfs.is_file(ws.repo, tail):
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
    timeout_s: float = 1800.0,
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
    backend: str | None = None,
    *,
    options: dict | None = None,
    timeout_s: float = 1800.0,
    limits: Limits | None = None,
    parse_budget_s: float | None = PARSE_BUDGET_S,
) -> GradeResult:
    """Grade one prediction (a unified diff against `base_commit`; None or "" is the empty patch). A patch that is
    not text, or names a path outside the work tree or in .git/, is the prediction's error, found before any
    sandbox starts."""
    problem = patch_problem(patch)
    if problem:
        return _not_run(inst, problem, False)
    try:
        with instance_sandbox(inst, backend, options, limits) as (box, workdir):
            return grade_in_sandbox(box, inst, workdir, patch, timeout_s, parse_budget_s)
    except (SandboxError, GradeError) as err:
        return _not_run(inst, f"environment: {err}", False)
    except Exception as err:  # e.g. the Docker engine refuses the image: a broken environment, not a wrong patch
        log.warning("%s: the environment failed: %s", inst.instance_id, err)
        return _not_run(inst, f"environment: {type(err).__name__}: {err}", False)


def _host_git(git_dir: Path, *args: str, cwd: Path, index: Path | None = None) -> str:
    """Host git over a git folder the host made, with no system or user config: no hook, fsmonitor, filter,
    textconv or external diff of anyone else's can run."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env |= {"GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_TERMINAL_PROMPT": "0"}
    if index is not None:
        env["GIT_INDEX_FILE"] = str(index)
    command = ["git", "-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false", f"--git-dir={git_dir}", *args]
    done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        raise GradeError(f"`git {' '.join(args)}` in {cwd} failed: {done.stderr.strip()[-300:]}")
    return done.stdout


def patch_from_tree(tree: Path, base_commit: str) -> str:
    """The edits of a working tree (tracked and new files) against `base_commit`, as a patch for `grade_patch`.

    The tree was edited by a main agent, so its .git/ is untrusted: a planted config (core.fsmonitor, a
    `filter.X.clean` driver for its .gitattributes, a textconv, hooks) would run commands on the host. So the host
    never runs git with the tree's .git/ as its repository: a fresh git folder the host made fetches `base_commit`
    from it (upload-pack, which git keeps safe over untrusted repositories) and indexes the tree as its work tree.
    A `.git` below the top (a folder, a file naming a `gitdir:`, or a link) would make git read that repository as a
    submodule, wherever it points on the host: the folders holding one are left out of the patch. The tree and its
    .git/ are left as they were."""
    tree = Path(tree)
    dot_git = tree / ".git"
    if dot_git.is_symlink() or not dot_git.is_dir():
        raise GradeError(f"{tree} has no .git folder of its own (a link or a file there is not followed)")
    with tempfile.TemporaryDirectory(dir=run_root()) as scratch:
        git_dir = Path(scratch) / "git"
        _host_git(git_dir, "init", "--quiet", "--bare", "--template=", str(git_dir), cwd=Path(scratch))
        _host_git(git_dir, "fetch", "--quiet", "--no-tags", "--depth=1", str(dot_git.resolve()), base_commit, cwd=tree)
        index = Path(scratch) / "index"
        work = (f"--work-tree={tree}",)
        _host_git(git_dir, *work, "read-tree", base_commit, cwd=tree, index=index)
        _host_git(git_dir, *work, "add", "-A", "--", ".", *_nested_repositories(tree), cwd=tree, index=index)
        diff = ("diff", "--cached", "--binary", "--no-color", "--no-ext-diff", "--no-textconv", base_commit)
        return _host_git(git_dir, *work, *diff, cwd=tree, index=index)


def _nested_repositories(tree: Path) -> list[str]:
    """`:(exclude)` pathspecs for each folder below the top of `tree` holding a `.git` entry (links not followed)."""
    with fdtree.DirChain(tree) as chain:
        nested = sorted({str(Path(rel).parent) for rel, _ in fdtree.walk(chain.root_fd) if Path(rel).name == ".git"})
    return [f":(exclude,literal){rel}" for rel in nested if rel != "."]


def patch_from_sandbox(box: Sandbox, inst: RepairInstance, workdir: str) -> str:
    """What was edited inside a sandbox (e.g. by the main agent in the instance's image), as a patch. git runs in
    the sandbox without hooks or fsmonitor; the host reads the diff file without following a link (a filter
    driver the agent planted could swap it for one while git runs)."""
    return diff_from_sandbox(box, inst, workdir).decode("utf-8", errors="replace")


def diff_from_sandbox(box: Sandbox, inst: RepairInstance, workdir: str) -> bytes:
    """`patch_from_sandbox`'s diff as git wrote it, byte for byte (a file that is not UTF-8 text stays as it is)."""
    name = "terminus-agent.diff"
    hostfs.unlink(host_tmp(box), name)
    diff = "diff --cached --binary --no-color --no-ext-diff --no-textconv"
    command = (
        f'cd {workdir} && {GIT} add -A && {GIT} {diff} {shlex.quote(inst.base_commit)} > "${{TMPDIR:-/tmp}}/{name}"'
    )
    done = box.run(command, 300)
    if done.exit_code != 0:
        raise GradeError(f"{inst.instance_id}: cannot read the edits: {done.output.strip()[-300:]}")
    try:
        return read_sandbox_file(box, name)
    except FileNotFoundError:
        raise GradeError(f"{inst.instance_id}: cannot read the edits: the sandbox removed their diff") from None
    except hostfs.UnsafePathError as err:
        raise GradeError(f"{inst.instance_id}: cannot read the edits, refused: {err}") from None


def grade_tree(inst: RepairInstance, tree: Path, backend: str | None = None, **kwargs) -> GradeResult:
    """Grade an edited working tree of a local-repository instance (a clone of `repo_path`)."""
    return grade_patch(inst, patch_from_tree(Path(tree), inst.base_commit), backend, **kwargs)
