"""Repair instances -> `Task` records for the subagent corpus, and the SWE-rebench-V2 training selection.

Every task starts at the instance's base commit with the test patch applied (the state a developer is in when the
new tests have just landed). Per instance:
- test-execution and error-diagnosis: facts from the dataset's per-test expectations (FAIL_TO_PASS fail,
  PASS_TO_PASS pass), or, after `validate_instances`, from the statuses its run observed;
- dependency: when the gold patch adds a package to a manifest (requirements*.txt, pyproject.toml, package.json,
  go.mod, Cargo.toml), the install step is what the tests need: the package and its install command;
- build/compile (compiled languages, only after validation): whether the tests built, from whether every
  FAIL_TO_PASS test reported a status at all (warning counts are only known for Go, which has none).
"""

from __future__ import annotations

import hashlib
import json
import random
import re
import shlex
import shutil
import subprocess
from collections import defaultdict
from pathlib import Path

from terminus.io import write_text_atomic
from terminus.sandbox.spec import SandboxSpec
from terminus.swe.benchmarks import benchmark_repos, instances_from_rows, load_benchmark_config
from terminus.swe.environment import diff_from_sandbox, instance_sandbox
from terminus.swe.families import load_rows
from terminus.swe.gitops import checkout
from terminus.swe.grade import setup_tests_commands
from terminus.swe.history import hide_history
from terminus.swe.parsers import PASSING
from terminus.swe.patchcheck import files_after, patch_problem
from terminus.swe.record import GradeError, RepairInstance, file_stem
from terminus.swe.validate import check_environment_drops, validate_instances
from terminus.tasks.queries import OPENINGS, RESTRICTIONS, TEMPLATES
from terminus.tasks.record import Task, write_tasks
from terminus.tasks.splits import SHORT, assign_splits, corpus_stats

COMPILED = {"go", "rust", "java", "kotlin", "scala", "csharp", "c#", "c", "cpp", "c++", "typescript", "ts"}
_MANIFESTS = {
    "requirements": (re.compile(r"(^|/)requirements[^/]*\.txt$"), re.compile(r"^\+\s*([A-Za-z0-9][\w.\-]*)"), "pip"),
    "pyproject": (
        re.compile(r"(^|/)pyproject\.toml$"),
        re.compile(r"^\+\s*\"([A-Za-z0-9][\w.\-]*)[\s<>=~!;\[\"]"),
        "pip",
    ),
    "package.json": (
        re.compile(r"(^|/)package\.json$"),
        re.compile(r"^\+\s*\"(@?[\w.\-/]+)\"\s*:\s*\"[\^~<>=]?\d"),
        "npm",
    ),
    "go.mod": (re.compile(r"(^|/)go\.mod$"), re.compile(r"^\+\s*(?:require\s+)?([\w.\-]+\.[\w.\-/]+)\s+v\d"), "go"),
    "cargo": (re.compile(r"(^|/)Cargo\.toml$"), re.compile(r"^\+\s*([A-Za-z0-9_\-]+)\s*=\s*[\"{]"), "cargo"),
}
_FIX = {"pip": "pip install {p}", "npm": "npm install {p}", "go": "go get {p}", "cargo": "cargo add {p}"}


def slug(instance_id: str) -> str:
    """The id as a folder and task-id part: itself when safe, else safe characters and a digest (`file_stem`)."""
    return file_stem(instance_id)


def added_dependency(gold_patch: str) -> dict | None:
    """The first package a patch adds to a dependency manifest, with its install command."""
    for section in re.split(r"(?m)^(?=diff --git )", gold_patch):
        m = re.match(r"diff --git a/\S+ b/(\S+)", section)
        if not m:
            continue
        for file_re, line_re, tool in _MANIFESTS.values():
            if not file_re.search(m.group(1)):
                continue
            for line in section.splitlines():
                if line.startswith("+++"):
                    continue
                if (hit := line_re.match(line)) and hit.group(1) not in ("python", "name", "version", "go"):
                    return {"package": hit.group(1), "fix": _FIX[tool].format(p=hit.group(1)), "manifest": m.group(1)}
    return None


def fix_locations(gold_patch: str) -> list[str]:
    """file:line of each hunk of the gold patch (where the fix goes), for analysis; not a fact to state."""
    out, current = [], None
    for line in gold_patch.splitlines():
        if line.startswith("+++ b/"):
            current = line[6:]
        elif line.startswith("@@") and current and (m := re.match(r"@@ -(\d+)", line)):
            out.append(f"{current}:{m.group(1)}")
    return out


def _facts(inst: RepairInstance, observed: dict | None) -> dict:
    statuses = ((observed or {}).get("before") or {}).get("statuses")
    if statuses:
        failing = sorted(t for t, s in statuses.items() if s not in PASSING and s != "SKIPPED")
        passed = sum(1 for s in statuses.values() if s in PASSING)
        return {"tests": {"passed": passed, "failed": len(failing), "failing": failing}}
    return {
        "tests": {
            "passed": len(inst.pass_to_pass),
            "failed": len(inst.fail_to_pass),
            "failing": list(inst.fail_to_pass),
        }
    }


def _build_facts(inst: RepairInstance, observed: dict | None) -> dict | None:
    statuses = ((observed or {}).get("before") or {}).get("statuses")
    if not statuses or inst.language.lower() not in COMPILED:
        return None
    built = all(t in statuses for t in inst.fail_to_pass)
    if built and inst.language.lower() != "go":
        return None  # the warning count a build task must state is unknown here
    return {"success": built, **({"warnings": 0} if built else {})}


def _query(task_type: str, inst: RepairInstance, rng: random.Random) -> str:
    template = rng.choice(TEMPLATES[task_type])
    text = template.format(test=inst.test_cmd, build=inst.build_cmd or "the build", where="")
    if task_type != "build/compile" and "{test}" not in template:
        # The facts are about this command's tests (the selected files), not the whole suite: say so.
        text += f" The tests to run: `{inst.test_cmd}`."
    restriction = rng.choice(RESTRICTIONS)
    if task_type == "dependency" and "install" in restriction.lower():
        restriction = " Do not install it yourself, just tell me."
    return (rng.choice(OPENINGS) + text + restriction).strip()


def tests_in_place(inst: RepairInstance, spec: SandboxSpec) -> bytes:
    """The diff, against the base commit, that the instance's test setup makes (SWE-Bench Pro's
    `before_repo_set_cmd`, or the test patch), made in a sandbox over a clone with the whole history (Pro's setup
    checks the test files out of the fix commit). The setup commands are the dataset's: like every command of a
    row, they run in a sandbox, never on the host."""
    with instance_sandbox(inst, spec) as (box, workdir):
        for command in setup_tests_commands(inst, workdir):
            done = box.run(command, 600)
            if done.exit_code != 0:
                output = done.output.strip()[-300:]
                raise GradeError(f"{inst.instance_id}: putting the tests in place failed: {output}")
        return diff_from_sandbox(box, inst, workdir)


def snapshot(inst: RepairInstance, dest: Path, spec: SandboxSpec) -> Path:
    """A local-repository instance at base + test patch, as the folder its tasks' episodes start from. Its .git
    holds the base commit alone (`base_git`): no later commit, so no fix to read, and the size of one tree; the
    test patch is in the working tree, uncommitted. The setup runs in a sandbox of `spec` (the run's); the host
    applies the diff it made, fed to git apply on stdin (no file in a shared temp folder)."""
    diff = tests_in_place(inst, spec) if inst.test_setup or inst.test_patch.strip() else b""
    problem = patch_problem(diff.decode("utf-8", errors="replace"))
    if problem:
        raise GradeError(f"{inst.instance_id}: putting the tests in place made a diff that is refused: {problem}")
    shutil.rmtree(dest, ignore_errors=True)
    checkout(inst.repo_path or "", inst.base_commit, dest, hide_future=True)
    if diff.strip():
        command = ["git", "-c", "core.hooksPath=/dev/null", "apply", "--whitespace=nowarn", "-"]
        done = subprocess.run(command, cwd=dest, input=diff, capture_output=True, timeout=600)
        if done.returncode != 0:
            output = done.stderr.decode(errors="replace").strip()[-300:]
            raise GradeError(f"{inst.instance_id}: the tests' diff does not apply to the snapshot: {output}")
    return dest


def tasks_for(
    inst: RepairInstance,
    tasks_file: Path,
    observed: dict | None = None,
    seed: int = 0,
    spec: SandboxSpec = SandboxSpec(),
) -> list[Task]:
    """The corpus tasks of one instance; local repositories get a snapshot under repos/ next to the task file,
    their test setup run in a sandbox of `spec` (the run's; by default the default backend)."""
    base = f"swe-{slug(inst.instance_id)}"
    workspace, image, setup = None, inst.image, []
    if inst.repo_path:
        snapshot(inst, Path(tasks_file).parent / "repos" / base, spec)
        workspace = f"repos/{base}"
    else:
        # the test setup first (Pro's checks the tests out of the fix commit), then the history after the base
        # commit goes: the episode starts in a repository of that one commit
        workdir = inst.workdir or "/"
        hide = hide_history(shlex.quote(workdir), inst.base_commit)
        setup = [*inst.pre_test, *setup_tests_commands(inst, workdir), hide, f"cd {workdir}"]
    meta = {
        "instance_id": inst.instance_id,
        "family": inst.family,
        "base_commit": inst.base_commit,
        "test_cmd": inst.test_cmd,
        "log_parser": inst.log_parser,
        "fix_locations": fix_locations(inst.gold_patch),
        "facts_from": "observed run" if observed else "dataset FAIL_TO_PASS/PASS_TO_PASS",
        "test_files": files_after(inst.test_patch),
        **({"binds": inst.binds} if inst.binds else {}),
    }
    facts = _facts(inst, observed)
    kinds: list[tuple[str, dict]] = [("test-execution", facts), ("error-diagnosis", facts)]
    if dep := added_dependency(inst.gold_patch):
        kinds.append(("dependency", {**facts, "dependency": {"package": dep["package"], "fix": dep["fix"]}}))
    if build := _build_facts(inst, observed):
        kinds.append(("build/compile", {"build": build}))
    tasks = []
    for task_type, task_facts in kinds:
        rng = random.Random(f"{seed}/{base}/{task_type}")
        tasks.append(
            Task(
                id=f"{base}-{SHORT[task_type]}",
                language=inst.language,
                source="manifest",
                repo=inst.repo,
                task_type=task_type,
                query=_query(task_type, inst, rng),
                facts=task_facts,
                description=inst.problem_statement[:2000],
                workspace=workspace,
                image=image,
                setup=setup,
                variant=inst.family,
                meta=meta,
            )
        )
    return tasks


def label_distribution(tasks: list[Task]) -> dict:
    """Counts by task type (and language, source, split) next to the paper's 2,692 / 2,166 / 969 / 106."""
    return corpus_stats(tasks)


def _order(seed: int, key: str) -> str:
    return hashlib.sha256(f"{seed}/{key}".encode()).hexdigest()


def select_rebench(rows: list[dict], cfg: dict, exclude_repos: set[str]) -> tuple[list[dict], dict[str, str]]:
    """The SWE-rebench-V2 training selection of the config, and each chosen repository's split."""
    languages = {lang.lower() for lang in cfg.get("languages") or []}
    seed = int(cfg.get("seed", 0))
    by_repo: dict[str, list[dict]] = defaultdict(list)
    for row in rows:
        language = str(row.get("language") or "").lower()
        if (languages and language not in languages) or row.get("repo") in exclude_repos:
            continue
        by_repo[row["repo"]].append(row)
    chosen: list[dict] = []
    repos: list[str] = []
    for repo in sorted(by_repo, key=lambda r: _order(seed, r)):
        if len(chosen) >= cfg.get("max_instances", 10_000) or len(repos) >= cfg.get("max_repos", 2144):
            break
        picked = sorted(by_repo[repo], key=lambda r: _order(seed, r["instance_id"]))[: cfg.get("max_per_repo", 8)]
        chosen += picked[: cfg.get("max_instances", 10_000) - len(chosen)]
        repos.append(repo)
    splits = assign_splits(repos, cfg.get("splits") or {"train": 0.9, "val": 0.05, "test": 0.05}, seed)
    return chosen, splits


def selected_instances(swe_cfg: dict) -> tuple[list[RepairInstance], int]:
    """The config's `tasks.swe` selection as repair instances (capped at its `limit`), and how many rows the
    selection chose before the cap: what the tasks stage validates, and `terminus swe pull` pre-pulls."""
    cfg = load_benchmark_config(swe_cfg["config"])
    source = swe_cfg.get("dataset") or cfg["dataset"]
    rows = load_rows(source, cfg.get("split"))
    exclude = set(cfg.get("exclude_repos") or []) | benchmark_repos(cfg.get("exclude_benchmarks") or [])
    selected, _ = select_rebench(rows, cfg, exclude)
    chosen = selected[: swe_cfg["limit"]] if swe_cfg.get("limit") else selected
    base_dir = Path(source).resolve().parent if Path(source).is_file() else None
    return instances_from_rows(chosen, cfg, base_dir), len(selected)


def build_swe_corpus(swe_cfg: dict, out: Path, spec: SandboxSpec, seed: int = 0) -> dict:
    """The paper's real-repository corpus in one step: the selection (`swe_cfg["config"]`, e.g. SWE-rebench-V2),
    validated in the instances' images when `swe_cfg["validate"]` (dropped ones counted), then corpus tasks.
    Writes `out` (tasks), `<out>.validation.json` and `<out>.stats.json`; returns the stats."""

    out = Path(out)
    instances, selected = selected_instances(swe_cfg)
    report: dict = {"instances": len(instances), "kept": len(instances), "dropped": 0, "observed": {}}
    if swe_cfg["validate"]:
        # the progress file keeps each instance's outcome through a kill (a job cut off at its time limit)
        instances, report = validate_instances(
            instances,
            spec,
            concurrency=swe_cfg["concurrency"],
            progress=out.with_suffix(".validation.progress.jsonl"),
        )
    write_text_atomic(out.with_suffix(".validation.json"), json.dumps(report, indent=1, default=str) + "\n")
    if swe_cfg["validate"]:  # after the report is written, so that every reason can be read
        check_environment_drops(report, swe_cfg["max_environment_drop"], out.with_suffix(".validation.json"))
    tasks = [
        t for inst in instances for t in tasks_for(inst, out, report["observed"].get(inst.instance_id), seed, spec)
    ]
    write_tasks(out, sorted(tasks, key=lambda t: t.id))
    validation = {k: report[k] for k in ("instances", "kept", "dropped")}
    stats = label_distribution(tasks) | {"selected": selected, "validation": validation}
    write_text_atomic(out.with_suffix(".stats.json"), json.dumps(stats, indent=1) + "\n")
    return stats
