"""A Go module with `go test` tests (the verbose log goes through `t.Logf`)."""

from __future__ import annotations

from terminus.tasks.synthetic.common import Files, camel, camel_body, cases_of, mark, pascal
from terminus.tasks.synthetic.spec import Spec


def render(spec: Spec, out: Files) -> dict:
    source = f"{spec.domain}.go"
    out.add("go.mod", f"module example.com/{spec.package}", "", "go 1.19")
    out.add(source, f"// Package {spec.package} holds the {spec.domain} calculations.", f"package {spec.package}", "")
    info: dict = {"assert_type": "test failed"}
    for k, f in enumerate(spec.functions):
        out.add(
            source,
            f"// {pascal(f.name)} computes the {f.name.replace('_', ' ')}.",
            f"func {pascal(f.name)}({', '.join(camel(p) for p in f.params)} int) int {{",
        )
        line = out.add(source, f"\treturn {camel_body(spec, k)}")
        out.add(source, "}", "")
        mark(spec, k, info, f"{source}:{line}", "compile error")
    ids = []
    for suite in range(spec.suites):
        test = f"{spec.domain}{'' if suite == 0 else '_more'}_test.go"
        out.add(test, f"package {spec.package}", "", 'import "testing"', "")
        if spec.verbose_lines and suite == 0:
            out.add(
                test,
                "func replayAuditLog(t *testing.T) {",
                f"\tfor i := 0; i < {spec.verbose_lines}; i++ {{",
                f'\t\tt.Logf("[{spec.package}] reconciling batch %03d: %d records ok", i, 17+i%5)',
                "\t}",
                "}",
                "",
            )
        for k, f, label, args, expected in cases_of(spec, suite):
            name = f"Test{pascal(f.name)}{pascal(label)}"
            out.add(test, f"func {name}(t *testing.T) {{")
            if spec.verbose_lines:
                out.add(test, "\treplayAuditLog(t)")
            call = f"{pascal(f.name)}({', '.join(map(str, args))})"
            out.add(test, f"\tif got := {call}; got != {expected} {{")
            line = out.add(test, f'\t\tt.Fatalf("{call} = %d, want {expected}", got)')
            out.add(test, "\t}", "}", "")
            ids.append((k, label, name, f"{test}:{line}"))
    info["ids"] = ids
    return info
