"""Synthetic projects: small, realistic buildable repositories in five languages whose faults we inject, so
that every fact (test counts, failing test ids, file:line of a failure and of its cause, warnings, the missing
package) is known by construction. `tests/tasks/test_synthetic.py` checks the facts against real runs.

A project is a *domain* (a handful of integer functions with realistic names, e.g. billing's `line_total`),
rendered in one language with its tests. `spec` decides everything (functions, cases, layout, fault);
`render` turns a spec into files and facts through one renderer per language (`python`, `node`, `cmake`,
`rust`, `go`: each `render(spec, out) -> info`), which share `common`'s per-function fault bookkeeping.
"""

from terminus.tasks.synthetic.common import Files, camel, pascal
from terminus.tasks.synthetic.render import RENDERERS, Project, fix_for, generate, render
from terminus.tasks.synthetic.spec import (
    CASE_LABELS,
    DOMAINS,
    LANGUAGES,
    MUTATIONS,
    NODE_PACKAGES,
    SUBFOLDERS,
    SUPPORTED,
    TASK_TYPES,
    VARIANTS,
    Function,
    Spec,
    evaluate,
    make_spec,
    mutate,
)

__all__ = [
    "CASE_LABELS",
    "DOMAINS",
    "LANGUAGES",
    "MUTATIONS",
    "NODE_PACKAGES",
    "RENDERERS",
    "SUBFOLDERS",
    "SUPPORTED",
    "TASK_TYPES",
    "VARIANTS",
    "Files",
    "Function",
    "Project",
    "Spec",
    "camel",
    "evaluate",
    "fix_for",
    "generate",
    "make_spec",
    "mutate",
    "pascal",
    "render",
]
