"""A Node.js package with `node --test` tests."""

from __future__ import annotations

from terminus.tasks.synthetic.common import Files, camel, camel_body, cases_of, functions_of, mark, missing_import
from terminus.tasks.synthetic.spec import Spec


def render(spec: Spec, out: Files) -> dict:
    module = f"src/{spec.domain}.js"
    out.add(
        "package.json",
        "{",
        f'  "name": "{spec.package.replace("_", "-")}",',
        '  "version": "1.4.0",',
        '  "private": true,',
        '  "scripts": {"test": "node --test"}',
        "}",
    )
    out.add(module, "'use strict';", f"// {spec.domain.title()} calculations used by the {spec.package} service.", "")
    info: dict = {"assert_type": "AssertionError"}
    if spec.dependency:
        missing_import(out, module, f"const dep = require({spec.dependency!r});", "Error: Cannot find module", info)
    for k, f in enumerate(spec.functions):
        out.add(module, f"function {camel(f.name)}({', '.join(camel(p) for p in f.params)}) {{")
        line = out.add(module, f"  return {camel_body(spec, k)};")
        out.add(module, "}", "")
        mark(spec, k, info, f"{module}:{line}", "SyntaxError")
    out.add(module, f"module.exports = {{ {', '.join(camel(f.name) for f in spec.functions)} }};")
    ids = []
    for suite in range(spec.suites):
        test = f"test/{spec.domain}{'' if suite == 0 else '-more'}.test.js"
        names = [camel(f.name) for f in functions_of(spec, suite)]
        out.add(
            test,
            "const test = require('node:test');",
            "const assert = require('node:assert');",
            f"const {{ {', '.join(names)} }} = require('../{module[:-3]}');",
            "",
        )
        if spec.verbose_lines:
            out.add(
                test,
                "function replayAuditLog() {",
                f"  for (let i = 0; i < {spec.verbose_lines}; i++) {{",
                f"    console.log(`[{spec.package}] reconciling batch ${{String(i).padStart(3, '0')}}: "
                "${17 + (i % 5)} records ok`);",
                "  }",
                "}",
                "",
            )
        for k, f, label, args, expected in cases_of(spec, suite):
            name = f"{camel(f.name)} {label.replace('_', ' ')}"
            out.add(test, f"test('{name}', () => {{")
            if spec.verbose_lines:
                out.add(test, "  replayAuditLog();")
            line = out.add(test, f"  assert.strictEqual({camel(f.name)}({', '.join(map(str, args))}), {expected});")
            out.add(test, "});", "")
            ids.append((k, label, name, f"{test}:{line}"))
    info["ids"] = ids
    return info
