"""A Rust crate: unit tests in `src/lib.rs`, a second suite as an integration test."""

from __future__ import annotations

from terminus.tasks.synthetic.common import Files, body, cases_of, mark
from terminus.tasks.synthetic.spec import Spec


def render(spec: Spec, out: Files) -> dict:
    lib = "src/lib.rs"
    out.add(
        "Cargo.toml",
        "[package]",
        f'name = "{spec.package}"',
        'version = "0.2.0"',
        'edition = "2021"',
        "",
        "[dependencies]",
    )
    # libtest runs tests on several threads and prints failures in the order they end: one thread makes the log the
    # same on every run (a head-and-tail cut of it, the eval's truncation arms, otherwise saw different failures)
    out.add(".cargo/config.toml", "[env]", 'RUST_TEST_THREADS = "1"')
    out.add(lib, f"//! {spec.domain.title()} calculations used by the {spec.package} service.", "")
    info: dict = {"assert_type": "panicked"}
    for k, f in enumerate(spec.functions):
        out.add(lib, f"pub fn {f.name}({', '.join(f'{p}: i64' for p in f.params)}) -> i64 {{")
        for w in range(spec.warnings if k == 0 else 0):
            out.add(lib, f"    let scratch_{w} = {w};")
        line = out.add(lib, f"    {body(spec, k)}")
        out.add(lib, "}", "")
        mark(spec, k, info, f"{lib}:{line}", "compile error")
    ids = []
    for suite in range(spec.suites):
        if suite == 0:
            path, prefix = lib, "tests::"
            out.add(lib, "#[cfg(test)]", "mod tests {", "    use super::*;", "")
        else:
            path, prefix = f"tests/{spec.domain}_more.rs", ""
            out.add(path, f"use {spec.package}::*;", "")
        indent = "    " if suite == 0 else ""
        if spec.verbose_lines:
            out.add(
                path,
                f"{indent}fn replay_audit_log() {{",
                f"{indent}    for i in 0..{spec.verbose_lines} {{",
                f'{indent}        println!("[{spec.package}] reconciling batch {{:03}}: '
                '{} records ok", i, 17 + i % 5);',
                f"{indent}    }}",
                f"{indent}}}",
                "",
            )
        for k, f, label, args, expected in cases_of(spec, suite):
            out.add(path, f"{indent}#[test]", f"{indent}fn {f.name}_{label}() {{")
            if spec.verbose_lines:
                out.add(path, f"{indent}    replay_audit_log();")
            line = out.add(path, f"{indent}    assert_eq!({f.name}({', '.join(map(str, args))}), {expected});")
            out.add(path, f"{indent}}}", "")
            ids.append((k, label, f"{prefix}{f.name}_{label}", f"{path}:{line}"))
        if suite == 0:
            out.add(lib, "}")
    info["ids"] = ids
    return info
