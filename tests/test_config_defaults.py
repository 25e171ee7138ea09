"""Each config default lives once, in terminus.settings: no function argument default, dataclass field or module
constant in src/ may restate one as a literal for the same notion (a copy drifts: eval's 256 tokens, the CLI's
120-second timeout and the SWE grader's 1800 seconds were each typed in two or three places). A value that
differs on purpose (a policy's own 512 tokens) is not the config's default and passes; one that must equal it
reads it from the models (`settings.field_default`, `settings.TURN_LIMIT`, ...)."""

from __future__ import annotations

import ast
from pathlib import Path

from pydantic import BaseModel

from terminus import settings
from terminus.config import ROOT

SRC = ROOT / "src" / "terminus"
NOTIONS = ("max_new_tokens", "request_timeout", "timeout_s", "max_turns", "concurrency")


def _config_defaults() -> dict[str, set]:
    """Each notion's defaults in the typed config, whichever section holds the key (`summary_max_new_tokens` counts
    as max_new_tokens)."""
    found: dict[str, set] = {n: set() for n in NOTIONS}
    models = [m for m in vars(settings).values() if isinstance(m, type) and issubclass(m, BaseModel)]
    for model in models:
        for name, info in model.model_fields.items():
            for notion in NOTIONS:
                if name == notion or name.endswith("_" + notion):
                    default = info.get_default(call_default_factory=True)
                    if isinstance(default, int | float) and not isinstance(default, bool):
                        found[notion].add(default)
    return found


def _literal(node) -> int | float | None:
    """The number a default is written as: `256`, `120.0`, or a call's first argument (`typer.Option(256, ...)`,
    `field(default=256)`)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, int | float) and not isinstance(node.value, bool):
        return node.value
    if isinstance(node, ast.Call):
        for kw in node.keywords:
            if kw.arg == "default":
                return _literal(kw.value)
        if node.args:
            return _literal(node.args[0])
    return None


def _restated(path: Path, defaults: dict[str, set], root: Path = ROOT) -> list[str]:
    found = []

    def check(name: str, value_node, line: int) -> None:
        notion = name.lower() if name.lower() in NOTIONS else None  # `max_timeout_s` (a sandbox's cap) is another
        value = _literal(value_node) if value_node is not None else None
        if notion and value is not None and value in defaults[notion]:
            found.append(f"{path.relative_to(root)}:{line} {name} = {value} restates the config default of {notion}")

    tree = ast.parse(path.read_text(), str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            args = node.args
            positional = args.posonlyargs + args.args
            for arg, default in zip(positional[len(positional) - len(args.defaults) :], args.defaults, strict=True):
                check(arg.arg, default, default.lineno)
            for arg, default in zip(args.kwonlyargs, args.kw_defaults, strict=True):
                if default is not None:
                    check(arg.arg, default, default.lineno)
        elif isinstance(node, ast.ClassDef):  # dataclass fields and class constants
            for stmt in node.body:
                if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
                    check(stmt.target.id, stmt.value, stmt.lineno)
    for stmt in tree.body:  # module constants
        if isinstance(stmt, ast.Assign):
            for target in stmt.targets:
                if isinstance(target, ast.Name):
                    check(target.id, stmt.value, stmt.lineno)
        elif isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
            check(stmt.target.id, stmt.value, stmt.lineno)
    return found


def test_no_config_default_is_restated_in_code():
    defaults = _config_defaults()
    assert all(defaults[n] for n in NOTIONS), defaults  # the scan knows each notion's default
    found = []
    for path in sorted(SRC.rglob("*.py")):
        if SRC / "settings" in path.parents:
            continue
        found += _restated(path, defaults)
    assert found == [], "read these from terminus.settings:\n" + "\n".join(found)


def test_the_scan_sees_an_argument_default_a_field_and_a_constant(tmp_path):
    path = tmp_path / "sample.py"
    path.write_text(
        "import typer\n"
        "MAX_TURNS = 10\n"
        "def f(max_new_tokens: int = 256, *, request_timeout=typer.Option(120.0), concurrency=3): ...\n"
        "class C:\n    timeout_s: float = 1800.0\n    max_timeout_s: float = 1800.0\n"
    )
    found = _restated(path, _config_defaults(), root=tmp_path)
    assert sorted(line.split()[1] for line in found) == ["MAX_TURNS", "max_new_tokens", "request_timeout", "timeout_s"]
