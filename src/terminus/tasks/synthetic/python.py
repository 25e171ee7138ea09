"""A Python package with pytest tests."""

from __future__ import annotations

from terminus.tasks.synthetic.common import Files, body, cases_of, functions_of, mark, missing_import
from terminus.tasks.synthetic.spec import Spec


def render(spec: Spec, out: Files) -> dict:
    pkg = spec.package
    module = f"{pkg}/{spec.domain}.py"
    out.add(
        "pyproject.toml",
        "[project]",
        f'name = "{pkg.replace("_", "-")}"',
        'version = "0.3.0"',
        'requires-python = ">=3.9"',
        "",
        "[tool.pytest.ini_options]",
        'pythonpath = ["."]',
        'testpaths = ["tests"]',
    )
    out.add(f"{pkg}/__init__.py", f'"""{spec.domain.title()} helpers."""')
    out.add(module, f'"""{spec.domain.title()} calculations used by the {pkg} service."""', "")
    info: dict = {"assert_type": "AssertionError"}
    if spec.dependency:
        missing_import(out, module, f"import {spec.dependency}", "ModuleNotFoundError", info)
    for k, f in enumerate(spec.functions):
        out.add(
            module, "", f"def {f.name}({', '.join(f.params)}):", f'    """{f.name.replace("_", " ").capitalize()}."""'
        )
        line = out.add(module, f"    return {body(spec, k)}")
        mark(spec, k, info, f"{module}:{line}", "SyntaxError")
    ids = []
    for suite in range(spec.suites):
        test = f"tests/test_{spec.domain}{'' if suite == 0 else '_more'}.py"
        names = [f.name for f in functions_of(spec, suite)]
        out.add(test, f"from {pkg}.{spec.domain} import {', '.join(names)}", "")
        if spec.verbose_lines:
            out.add(
                test,
                "",
                "def _replay_audit_log():",
                f"    for i in range({spec.verbose_lines}):",
                f'        print(f"[{pkg}] reconciling batch {{i:03d}}: {{17 + i % 5}} records ok")',
                "",
            )
        for k, f, label, args, expected in cases_of(spec, suite):
            out.add(test, "", f"def test_{f.name}_{label}():")
            if spec.verbose_lines:
                out.add(test, "    _replay_audit_log()")
            line = out.add(test, f"    assert {f.name}({', '.join(map(str, args))}) == {expected}")
            ids.append((k, label, f"{test}::test_{f.name}_{label}", f"{test}:{line}"))
    info["ids"] = ids
    return info
