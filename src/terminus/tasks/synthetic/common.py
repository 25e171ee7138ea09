"""What every language's renderer shares: the file buffer with line numbers, name styles, and the per-function
fault bookkeeping (which expression a function's body gets, and where its fault is recorded)."""

from __future__ import annotations

from terminus.tasks.synthetic.spec import Spec, evaluate


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


def mark(spec: Spec, k: int, info: dict, where: str, error_type: str) -> None:
    """Record function k's fault at `where` (path:line of its body): the build error of a `broken` project, the
    root cause of a `fail` one."""
    if is_broken(spec, k):
        info["error_at"], info["error_type"] = where, error_type
    if spec.variant == "fail" and k == spec.mutated:
        info["root_cause"] = where
