"""SWE-bench-style manifests for the cluster: one entry per instance (repository, commit, image, setup and
test commands, ground truth). The docker and apptainer sandboxes run them in the entry's image.

A manifest is YAML or JSON lines; each entry:

    id: serilog-approval          # unique
    repo: https://github.com/serilog/serilog.git   # or a local path (tests use a local git repository)
    commit: 4f3c2a1...
    image: ghcr.io/org/serilog-env:1.0             # the environment the commands run in
    language: csharp
    task_type: test-execution
    setup: ["dotnet restore"]                       # optional
    test_cmd: "dotnet test"                         # optional, named in the default query
    query: "..."                                    # optional; otherwise made from the templates
    facts: {tests: {passed: 769, failed: 1, failing: [...]}}
    repo_id: serilog                                # optional: the repository's identity for splits
    description: "..."                              # optional context for the subagent

An id becomes a folder name, so it is limited to letters, digits, `.`, `_` and `-`; other keys are rejected with
their entry, and types are checked (`facts` a mapping, `setup` a list of commands).
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import yaml

from terminus.errors import TerminusError
from terminus.io import RecordError, ensure_inside, read_jsonl
from terminus.tasks.record import TASK_TYPES

REQUIRED = ("id", "repo", "commit", "image", "language", "task_type", "facts")
OPTIONAL = ("setup", "test_cmd", "query", "repo_id", "description")
SAFE_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
TYPES = {
    "id": str,
    "repo": str,
    "commit": str,
    "image": str,
    "language": str,
    "task_type": str,
    "facts": dict,
    "setup": list,
    "test_cmd": str,
    "query": str,
    "repo_id": str,
    "description": str,
}
TYPE_NAMES = {str: "a string", dict: "a mapping", list: "a list"}


class ManifestError(TerminusError, ValueError):
    pass


def load_manifest(path: Path) -> list[dict]:
    path = Path(path)
    if not path.is_file():
        raise ManifestError(f"manifest {path} does not exist")
    try:
        entries = read_jsonl(path) if path.suffix == ".jsonl" else yaml.safe_load(path.read_text()) or []
    except (RecordError, yaml.YAMLError) as err:
        raise ManifestError(f"manifest {path} cannot be parsed: {err}") from None
    if not isinstance(entries, list):
        raise ManifestError(f"manifest {path} must be a list of entries")
    seen = set()
    for i, entry in enumerate(entries):
        where = f"{path} entry {i}"
        if not isinstance(entry, dict):
            raise ManifestError(f"{where}: not a mapping")
        missing = [k for k in REQUIRED if k not in entry]
        if missing:
            raise ManifestError(f"{where} ({entry.get('id', '?')}): missing {', '.join(missing)}")
        _check_entry(entry, where)
        if entry["task_type"] not in TASK_TYPES:
            raise ManifestError(f"{where}: task_type {entry['task_type']!r} is not one of {', '.join(TASK_TYPES)}")
        if entry["id"] in seen:
            raise ManifestError(f"{where}: id {entry['id']!r} appears twice")
        seen.add(entry["id"])
        repo = entry["repo"]
        if "://" not in repo and not repo.startswith("git@"):
            local = (path.parent / repo).resolve()
            if not local.exists():
                raise ManifestError(f"{where}: repository {repo} not found (looked at {local})")
            entry["repo"] = str(local)
    return entries


def _check_entry(entry: dict, where: str) -> None:
    unknown = sorted(set(entry) - set(REQUIRED) - set(OPTIONAL))
    if unknown:
        raise ManifestError(
            f"{where}: unknown key {', '.join(map(repr, unknown))} (allowed: {', '.join(REQUIRED + OPTIONAL)})"
        )
    for key, kind in TYPES.items():
        if key in entry and not isinstance(entry[key], kind):
            raise ManifestError(
                f"{where}: {key} must be {TYPE_NAMES[kind]}, not {type(entry[key]).__name__} {entry[key]!r:.60}"
            )
    if not all(isinstance(c, str) and c.strip() for c in entry.get("setup", [])):
        raise ManifestError(f"{where}: setup must be a list of commands (non-empty strings)")
    if not SAFE_ID.match(entry["id"]):
        raise ManifestError(
            f"{where}: id {entry['id']!r} may hold only letters, digits, '.', '_' and '-' and must "
            "start with a letter or digit (it becomes a folder name)"
        )


def checkout(entry: dict, dest: Path, within: Path) -> Path:
    """Clone the entry's repository at its commit into dest (a snapshot the sandbox copies per episode).
    `dest` must lie inside `within` (the corpus's repos/ folder): it is deleted first."""
    try:
        ensure_inside(dest, within, f"manifest entry {entry['id']!r}: snapshot folder")
    except ValueError as err:
        raise ManifestError(str(err)) from None
    if dest.exists():
        shutil.rmtree(dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    # The commit alone (issue 40, "no future history"): a clone would carry every later commit, branch and tag, and
    # an agent can read the fix from `git log --all`. A shallow fetch of the one commit keeps its hash and tree.
    for command in (
        ["git", "init", "--quiet", "--template=", str(dest)],
        ["git", "-C", str(dest), "fetch", "--quiet", "--no-tags", "--depth=1", entry["repo"], entry["commit"]],
        ["git", "-C", str(dest), "-c", "advice.detachedHead=false", "checkout", "--quiet", "--detach", "FETCH_HEAD"],
        ["git", "-C", str(dest), "reflog", "expire", "--expire=all", "--all"],
    ):
        done = subprocess.run(command, capture_output=True, text=True, timeout=600)
        if done.returncode != 0:
            raise ManifestError(f"{entry['id']}: `{' '.join(command)}` failed: {done.stderr.strip()[-300:]}")
    (dest / ".git" / "FETCH_HEAD").unlink(missing_ok=True)
    return dest
