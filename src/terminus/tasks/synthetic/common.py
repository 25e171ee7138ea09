"""What every language's renderer shares: the file buffer with line numbers, name styles, the per-function
fault bookkeeping (which expression a function's body gets, and where its fault is recorded), and the walk over
each test suite's cases."""

from __future__ import annotations

import re
from collections.abc import Iterator

from terminus.tasks.synthetic.spec import Function, Spec, evaluate


def camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.title() for part in rest)


def pascal(name: str) -> str:
    return "".join(part.title() for part in name.split("_"))


class Files:
    """Files being written, with the line numbers facts point at."""

    def __init__(self) -> None:
        self.files: dict[str, list[str]] = {}

    def add(self, path: str, *lines: str) -> int:
        """Append lines to a file; returns the 1-based line number of the first one."""
        body = self.files.setdefault(path, [])
        body.extend(lines)
        return len(body) - len(lines) + 1


def suite_of(spec: Spec, k: int) -> int:
    """The test file (0 or 1) that checks function k."""
    return 0 if spec.suites == 1 or k < (len(spec.functions) + 1) // 2 else 1


def functions_of(spec: Spec, suite: int) -> list[Function]:
    """The functions that test file `suite` checks, in order."""
    return [f for k, f in enumerate(spec.functions) if suite_of(spec, k) == suite]


def cases_of(spec: Spec, suite: int) -> Iterator[tuple[int, Function, str, tuple[int, ...], int]]:
    """The cases of test file `suite`, in order: (function index, function, label, args, expected)."""
    for k, f in enumerate(spec.functions):
        if suite_of(spec, k) == suite:
            for label, args, expected in f.cases:
                yield k, f, label, args, expected


def is_broken(spec: Spec, k: int) -> bool:
    return spec.variant == "broken" and k == spec.mutated


def current_expr(spec: Spec, k: int) -> str:
    """Function k's expression as it computes: the flipped one in a `fail` project."""
    return spec.mutated_expr if (spec.variant == "fail" and k == spec.mutated) else spec.functions[k].expr


def case_fails(spec: Spec, k: int, label: str) -> bool:
    f = spec.functions[k]
    args, expected = next((a, e) for lab, a, e in f.cases if lab == label)
    return evaluate(current_expr(spec, k), f.params, args) != expected


def body(spec: Spec, k: int) -> str:
    """Function k's expression as its source shows it: broken mid-edit (`broken`), flipped (`fail`) or as is.

    A broken body is a compile/syntax error as a developer in mid-edit leaves it; in C the renderer drops the
    semicolon.
    """
    if not is_broken(spec, k):
        return current_expr(spec, k)
    expr = spec.functions[k].expr
    if spec.language == "cmake":
        return expr
    if spec.language in ("python", "node"):
        return expr.rsplit(" ", 1)[0]  # the last operand deleted: `quantity *`
    return f'{expr} + "{spec.functions[k].params[0]}"'  # rust, go: adding a string to an integer


def camel_body(spec: Spec, k: int) -> str:
    """`body` with the parameters in camelCase (Go, JavaScript); longest names first, so none eats another."""
    expr = body(spec, k)
    for p in sorted(spec.functions[k].params, key=len, reverse=True):
        expr = re.sub(rf"\b{p}\b", camel(p), expr)
    return expr


def missing_import(out: Files, path: str, statement: str, error_type: str, info: dict) -> None:
    """A missing-dep project imports the absent package at the top of `path`: there the run stops."""
    info["error_at"], info["error_type"] = f"{path}:{out.add(path, statement)}", error_type
    out.add(path, "")


def mark(spec: Spec, k: int, info: dict, where: str, error_type: str) -> None:
    """Record function k's fault at `where` (path:line of its body): the build error of a `broken` project, the
    root cause of a `fail` one."""
    if is_broken(spec, k):
        info["error_at"], info["error_type"] = where, error_type
    if spec.variant == "fail" and k == spec.mutated:
        info["root_cause"] = where
