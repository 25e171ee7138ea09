"""The instance's environment: a sandbox over it at its base commit (its image at `workdir`, or a clone of a local
`repo_path`), the grader's limits, and what is read back out of it (a file its commands left in /tmp, the edits
made in it as a patch)."""

from __future__ import annotations

import contextlib
import shlex
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

from terminus.sandbox import Limits, Sandbox, SandboxSpec, hostfs, make_sandbox
from terminus.sandbox.tmproot import run_root
from terminus.swe.gitops import GIT, GIT_SAFE, checkout
from terminus.swe.history import hide_history
from terminus.swe.record import GradeError, RepairInstance


def grading_limits(**env: str) -> Limits:
    """The grader's limits (real test suites: no memory or CPU rlimit, hours of wall clock; git without hooks), with
    extra environment variables (e.g. a PATH that reaches a toolchain)."""
    return Limits(address_space_mb=None, cpu_time_s=None, max_timeout_s=4 * 3600.0, extra_env={**GIT_SAFE, **env})


LIMITS = grading_limits()


@contextlib.contextmanager
def instance_sandbox(
    inst: RepairInstance,
    spec: SandboxSpec,
    limits: Limits | None = None,
    *,
    for_agent: bool = False,
) -> Iterator[tuple[Sandbox, str]]:
    """A sandbox of `spec` (the run's) over the instance at its base commit, in the instance's environment (its
    image and `binds`: `SandboxSpec.for_task`), and the shell expression of its repository folder.
    `for_agent`: the repository's later history is removed (what the main agent works in): a local repository's on
    the host (`base_git`), an image's inside the container as it starts (`history.hide_history`). Grading's own
    sandboxes keep it."""
    spec = spec.for_task(inst.image, inst.binds)
    if inst.repo_path:
        # Under this process's run root, so that the next terminus process removes it if this one is killed.
        scratch = Path(tempfile.mkdtemp(prefix="terminus-swe-", dir=run_root()))
        try:
            source = checkout(inst.repo_path, inst.base_commit, scratch / "repo", hide_future=for_agent)
            with make_sandbox(spec, source, limits or LIMITS) as box:
                yield box, '"$TERMINUS_WORKSPACE"'
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
    else:
        if not spec.runs_image:
            raise GradeError(
                f"{inst.instance_id} runs in image {inst.image}: use --sandbox docker or apptainer "
                "(local and bwrap need a row with repo_path)"
            )
        with make_sandbox(spec, None, limits or LIMITS) as box:
            workdir = shlex.quote(inst.workdir or "/")
            if for_agent:
                done = box.run(hide_history(workdir, inst.base_commit), 600)
                if done.exit_code != 0:
                    raise GradeError(
                        f"{inst.instance_id}: hiding the history after the base commit failed: "
                        f"{done.output.strip()[-300:]}"
                    )
            yield box, workdir


def read_sandbox_file(box: Sandbox, name: str) -> bytes:
    """A file the sandbox wrote in its /tmp, read from the host without following a link the sandbox planted there
    (hostfs): FileNotFoundError when absent, UnsafePathError for a link or anything but a regular file."""
    return hostfs.read_bytes(box.host_tmp, name)


def patch_from_sandbox(box: Sandbox, inst: RepairInstance, workdir: str) -> str:
    """What was edited inside a sandbox (e.g. by the main agent in the instance's image), as a patch. git runs in
    the sandbox without hooks or fsmonitor; the host reads the diff file without following a link (a filter
    driver the agent planted could swap it for one while git runs)."""
    return diff_from_sandbox(box, inst, workdir).decode("utf-8", errors="replace")


def diff_from_sandbox(box: Sandbox, inst: RepairInstance, workdir: str) -> bytes:
    """`patch_from_sandbox`'s diff as git wrote it, byte for byte (a file that is not UTF-8 text stays as it is)."""
    name = "terminus-agent.diff"
    hostfs.unlink(box.host_tmp, name)
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
