"""A spec to a project: each language's renderer writes the files and records the line numbers of its tests and
its fault; the facts follow from those and the spec."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path

from terminus.tasks.synthetic import cmake, go, node, python, rust
from terminus.tasks.synthetic.common import Files, case_fails
from terminus.tasks.synthetic.spec import Spec, make_spec

# language -> render(spec, out) -> info: {"ids": [(function index, label, test id, check location)],
#   "assert_type", and "error_at"/"error_type" (broken, missing-dep) or "root_cause" (fail)}
RENDERERS = {"python": python.render, "node": node.render, "cmake": cmake.render, "rust": rust.render, "go": go.render}


@dataclass
class Project:
    spec: Spec
    files: dict[str, str]
    facts: dict

    def write(self, root: Path) -> Path:
        return write_files(self.files, root)


def write_files(files: dict[str, str], root: Path) -> Path:
    """A project's files (relative path -> text) under `root`."""
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def render(spec: Spec) -> Project:
    out = Files()
    info = RENDERERS[spec.language](spec, out)
    prefix = f"{spec.subfolder}/" if spec.subfolder else ""
    files = {prefix + path: "\n".join(lines) + "\n" for path, lines in out.files.items()}
    return Project(spec, files, facts(spec, info, prefix))


def facts(spec: Spec, info: dict, prefix: str) -> dict:
    """Ground truth from the spec plus the line numbers the renderer recorded (paths relative to the repo)."""
    truth: dict = {"project_root": spec.subfolder or "."}
    ids = info["ids"]
    if spec.variant in ("pass", "fail", "warnings"):
        failing = [(tid, loc) for k, label, tid, loc in ids if case_fails(spec, k, label)]
        truth["tests"] = {
            "passed": len(ids) - len(failing),
            "failed": len(failing),
            "skipped": 0,
            "failing": [tid for tid, _ in failing],
        }
        truth["exit_code"] = 1 if failing else 0
        if failing:
            truth["error"] = {
                "type": info["assert_type"],
                "locations": [prefix + loc for _, loc in failing],
                "root_cause": prefix + info["root_cause"],
            }
        if spec.language in ("cmake", "rust", "go"):
            truth["build"] = {"success": True, "errors": [], "warnings": spec.warnings}
        return truth
    if spec.variant in ("broken", "missing-dep"):  # the run stops at the error: one location, its own cause
        where = prefix + info["error_at"]
        if spec.variant == "broken":
            truth["build"] = {"success": False, "errors": [{"location": where}], "warnings": 0}
        else:
            fix = {"python": "pip install", "node": "npm install"}[spec.language]
            truth["dependency"] = {"package": spec.dependency, "fix": f"{fix} {spec.dependency}"}
        truth["error"] = {"type": info["error_type"], "locations": [where], "root_cause": where}
        truth["exit_code"] = 1
    return truth


def fix_for(project: Project) -> dict | None:
    """The edit that repairs a `fail` project: its mutated line back to the line the passing variant has."""
    spec = project.spec
    if spec.variant != "fail":
        return None
    fixed = render(dataclasses.replace(spec, variant="pass", mutated=None, mutated_expr=None))
    path, line = project.facts["error"]["root_cause"].rsplit(":", 1)
    old = project.files[path].splitlines()[int(line) - 1]
    new = fixed.files[path].splitlines()[int(line) - 1]
    return {"file": path, "line": int(line), "old": old, "new": new}


def generate(language: str, domain: str, variant: str, index: int = 0, seed: int = 0, **options) -> Project:
    """One project with its facts. See `make_spec` for the options."""
    return render(make_spec(language, domain, variant, index, seed, **options))
