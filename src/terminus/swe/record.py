"""The repair instance (what the main agent is given and how it is graded), the grade of one prediction, and
`GradeError` (an instance that cannot be graded: its environment, its git, a patch refused).

Every SWE-bench-family adapter maps its rows to `RepairInstance`; everything downstream (sandboxes, grading,
validation, corpus tasks, predictions) reads only this record, never a family's own field names.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import asdict, dataclass, field, fields

from terminus.errors import TerminusError
from terminus.io import RecordError
from terminus.tasks.manifest import SAFE_ID


class InstanceIdError(TerminusError, ValueError):
    """Two instance ids that would share one file name."""


SCHEMA = "terminus.swe-instance/1"


class GradeError(TerminusError, RuntimeError):
    pass


def file_stem(instance_id: str, limit: int = 120) -> str:
    """A file name for an instance id: the id itself when it is a safe task id (SAFE_ID) of at most `limit`
    characters, else its safe characters and a digest of the whole id (`../x`, `/abs`, `a b`, long ids), so that
    no id names a path outside its folder and distinct ids keep distinct names."""
    if SAFE_ID.match(instance_id) and len(instance_id) <= limit:
        return instance_id
    digest = hashlib.sha256(instance_id.encode("utf-8", "surrogatepass")).hexdigest()[:12]
    readable = re.sub(r"[^A-Za-z0-9._-]+", "-", instance_id).strip("-._")[: limit - len(digest) - 1]
    return f"{readable}-{digest}" if readable else digest


def file_names(instance_ids: list[str], suffix: str) -> dict[str, str]:
    """{instance id: file name} for a folder of per-instance files; InstanceIdError if two ids would share one."""
    names = {i: file_stem(i) + suffix for i in instance_ids}
    if len(set(names.values())) < len(names):
        seen: dict[str, str] = {}
        for iid, name in names.items():
            if name in seen:
                raise InstanceIdError(f"instance ids {seen[name]!r} and {iid!r} would share the file name {name}")
            seen[name] = iid
    return names


@dataclass
class RepairInstance:
    instance_id: str
    family: str
    """verified | pro | sharp | rebench-v2 | multi (the dataset's family; see terminus.swe.families)."""
    repo: str
    """owner/name on GitHub: splits and eval-benchmark exclusion are by this identity."""
    language: str
    problem_statement: str
    base_commit: str
    test_patch: str
    gold_patch: str
    fail_to_pass: list[str]
    pass_to_pass: list[str]
    test_cmd: str
    """Shell command run in `workdir`; for families that select test files it already names them."""
    log_parser: str
    """A name in terminus.swe.parsers.PARSERS (aliases such as SWE-rebench-V2's `parse_log_pytest` resolve)."""
    image: str | None = None
    workdir: str | None = None
    """The repository inside `image` (/testbed, /app, /<repo name>); None for a local `repo_path`."""
    repo_path: str | None = None
    """A local git repository holding `base_commit`: graded in the chosen sandbox, without an image."""
    test_setup: list[str] = field(default_factory=list)
    """Commands that put the tests in place instead of applying `test_patch` (SWE-Bench Pro's
    `before_repo_set_cmd`); run in `workdir` after the model patch."""
    pre_test: list[str] = field(default_factory=list)
    """Commands run before the tests in the same shell (e.g. activating the image's conda environment)."""
    build_cmd: str | None = None
    binds: list[str] = field(default_factory=list)
    """Read-only host paths the tests need in the sandbox (an interpreter, a venv, a toolchain under /home or
    /tmp, which bwrap keeps private): `PATH` or `HOST:INSIDE`."""
    run_script: str | None = None
    """SWE-Bench Pro's per-instance run_script.sh (text), when the harness's run_scripts folder is given."""
    parser_script: str | None = None
    """SWE-Bench Pro's per-instance parser.py (text); with it, the official parser decides each test's status."""
    meta: dict = field(default_factory=dict)
    schema: str = SCHEMA

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> RepairInstance:
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise RecordError(f"repair instance {data.get('instance_id', '?')}: unknown fields {', '.join(unknown)}")
        return cls(**data)


@dataclass
class GradeResult:
    """The official rule: resolved iff every FAIL_TO_PASS and PASS_TO_PASS test passes after the patch."""

    instance_id: str
    resolved: bool
    f2p_passed: list[str] = field(default_factory=list)
    f2p_failed: list[str] = field(default_factory=list)
    p2p_passed: list[str] = field(default_factory=list)
    p2p_failed: list[str] = field(default_factory=list)
    patch_applied: bool = True
    error: str | None = None
    statuses: dict[str, str] = field(default_factory=dict)
    """Every test the log parser saw, with its status (PASSED, FAILED, SKIPPED, ERROR, XFAIL)."""
    log: str = ""
    outside_workspace: list[str] = field(default_factory=list)
    """Repository files the tracebacks show imported from outside the workspace (the environment's own copy)."""

    def report(self) -> dict:
        """The entry of `terminus swe grade`'s report for this instance."""
        return {
            "resolved": self.resolved,
            "fail_to_pass": {"passed": len(self.f2p_passed), "failed": len(self.f2p_failed)},
            "pass_to_pass": {"passed": len(self.p2p_passed), "failed": len(self.p2p_failed)},
            "patch_applied": self.patch_applied,
            "error": self.error,
        }

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> GradeResult:
        return cls(**{k: v for k, v in data.items() if k in {f.name for f in fields(cls)}})
