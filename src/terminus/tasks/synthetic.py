"""Synthetic projects: small, realistic buildable repositories in five languages whose faults we inject, so
that every fact (test counts, failing test ids, file:line of a failure and of its cause, warnings, the missing
package) is known by construction. `tests/tasks/test_synthetic.py` checks the facts against real runs.

A project is a *domain* (a handful of integer functions with realistic names, e.g. billing's `line_total`),
rendered in one language with its tests. Expressions use only `+ - *` and parentheses on small non-negative
integers, so they mean the same in Python, JavaScript, C, Rust and Go, and the expected value of every test
case (and which cases a mutated operator breaks) is computed here in Python.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass, field
from pathlib import Path

LANGUAGES = ("python", "node", "cmake", "rust", "go")
VARIANTS = ("pass", "fail", "broken", "missing-dep", "warnings")
# variant -> task types it yields
TASK_TYPES = {
    "pass": ("test-execution",),
    "fail": ("test-execution", "error-diagnosis"),
    "broken": ("build/compile", "error-diagnosis"),
    "missing-dep": ("dependency",),
    "warnings": ("build/compile",),
}
# Which variants a language supports: interpreted languages have no compiler warnings; the dependency
# variant needs a package manager whose missing package the expert can name (pip, npm).
SUPPORTED = {
    "python": ("pass", "fail", "broken", "missing-dep"),
    "node": ("pass", "fail", "broken", "missing-dep"),
    "cmake": ("pass", "fail", "broken", "warnings"),
    "rust": ("pass", "fail", "broken", "warnings"),
    "go": ("pass", "fail", "broken"),
}

# domain -> (functions as (name, params, expression), packages it might plausibly import)
DOMAINS: dict[str, tuple[list[tuple[str, tuple[str, ...], str]], tuple[str, str]]] = {
    "billing": (
        [
            ("line_total", ("quantity", "unit_price"), "quantity * unit_price"),
            ("apply_discount", ("total", "discount"), "total - discount"),
            ("add_shipping", ("total", "shipping"), "total + shipping"),
            ("invoice_total", ("subtotal", "tax", "fees"), "subtotal + tax + fees"),
        ],
        ("prettytable", "pendulum"),
    ),
    "inventory": (
        [
            ("restock", ("stock", "delivered"), "stock + delivered"),
            ("ship_order", ("stock", "ordered"), "stock - ordered"),
            ("shelf_capacity", ("rows", "slots"), "rows * slots"),
            ("reorder_gap", ("target", "stock", "incoming"), "target - (stock + incoming)"),
        ],
        ("prettytable", "humanize"),
    ),
    "geometry": (
        [
            ("rectangle_area", ("width", "height"), "width * height"),
            ("rectangle_perimeter", ("width", "height"), "2 * (width + height)"),
            ("border_tiles", ("side",), "4 * side - 4"),
            ("box_volume", ("width", "height", "depth"), "width * height * depth"),
        ],
        ("shapely", "pint"),
    ),
    "payroll": (
        [
            ("gross_pay", ("hours", "rate"), "hours * rate"),
            ("overtime_pay", ("hours", "rate"), "hours * rate * 2"),
            ("net_pay", ("gross", "deductions"), "gross - deductions"),
            ("annual_salary", ("monthly",), "monthly * 12"),
        ],
        ("holidays", "pendulum"),
    ),
    "scoreboard": (
        [
            ("total_points", ("goals", "assists"), "goals * 2 + assists"),
            ("apply_penalty", ("score", "fouls"), "score - fouls * 3"),
            ("streak_bonus", ("score", "streak"), "score + streak * streak"),
            ("goal_difference", ("scored", "conceded"), "scored - conceded"),
        ],
        ("prettytable", "inflect"),
    ),
    "thermostat": (
        [
            ("heat_delta", ("target", "current"), "target - current"),
            ("energy_cost", ("kwh", "price"), "kwh * price"),
            ("degree_hours", ("delta", "hours"), "delta * hours"),
            ("setpoint_after", ("setpoint", "steps", "step_size"), "setpoint + steps * step_size"),
        ],
        ("pint", "humanize"),
    ),
    "library": (
        [
            ("late_fee", ("days_late", "daily_fee"), "days_late * daily_fee"),
            ("copies_available", ("owned", "on_loan"), "owned - on_loan"),
            ("shelf_slots", ("shelves", "per_shelf"), "shelves * per_shelf"),
            ("renewal_due", ("borrowed_on", "loan_days", "renewals"), "borrowed_on + loan_days * (renewals + 1)"),
        ],
        ("dateparser", "inflect"),
    ),
    "fleet": (
        [
            ("fuel_needed", ("distance", "per_km"), "distance * per_km"),
            ("remaining_range", ("range_km", "driven"), "range_km - driven"),
            ("seats_total", ("buses", "seats"), "buses * seats"),
            ("route_length", ("legs", "leg_km", "detour"), "legs * leg_km + detour"),
        ],
        ("dateparser", "humanize"),
    ),
}
NODE_PACKAGES = {"prettytable": "cli-table3", "pendulum": "currency.js", "humanize": "pretty-ms", "shapely": "@turf/area",
                 "pint": "convert-units", "holidays": "date-holidays", "inflect": "pluralize", "dateparser": "dayjs"}  # fmt: skip
CASE_LABELS = ("typical", "with_zero", "larger_values")
SUBFOLDERS = ("services", "packages", "backend", "apps")
MUTATIONS = {"+": "-", "-": "+", "*": "+"}


@dataclass
class Function:
    name: str
    params: tuple[str, ...]
    expr: str
    cases: list[tuple[str, tuple[int, ...], int]] = field(default_factory=list)  # (label, args, expected)


@dataclass
class Spec:
    """Everything that decides a project's files and facts; `render_*` turn it into files."""

    language: str
    domain: str
    variant: str
    functions: list[Function]
    package: str  # project / crate / module name
    subfolder: str = ""  # "" or e.g. "services/billing"
    suites: int = 1  # test files
    verbose_lines: int = 0  # log lines each test prints (shown on failure by most runners)
    warnings: int = 0  # unused variables injected (compiled languages)
    mutated: int | None = None  # index of the function whose operator flips (fail) or breaks (broken)
    mutated_expr: str | None = None
    dependency: str | None = None


def evaluate(expr: str, params: tuple[str, ...], args: tuple[int, ...]) -> int:
    namespace = dict(zip(params, args, strict=True))
    if not re.fullmatch(r"[\w\s+*()-]+", expr):
        raise ValueError(f"unsupported expression {expr!r}")
    return int(eval(expr, {"__builtins__": {}}, namespace))


def mutate(expr: str, rng: random.Random) -> str | None:
    """Flip one operator (never the one inside a literal); None if the expression has none."""
    spots = [m.start() for m in re.finditer(r"(?<=\s)[+*-](?=\s)", expr)]
    if not spots:
        return None
    at = rng.choice(spots)
    return expr[:at] + MUTATIONS[expr[at]] + expr[at + 1 :]


def make_spec(language: str, domain: str, variant: str, index: int, seed: int, **options) -> Spec:
    """Deterministic in (language, domain, variant, index, seed): the same call gives the same project."""
    if language not in LANGUAGES:
        raise ValueError(f"unknown language {language!r}; choose from {', '.join(LANGUAGES)}")
    if domain not in DOMAINS:
        raise ValueError(f"unknown domain {domain!r}; choose from {', '.join(DOMAINS)}")
    if variant not in SUPPORTED[language]:
        raise ValueError(f"variant {variant!r} is not supported for {language} (supported: {SUPPORTED[language]})")
    # The repository (functions, cases, layout) depends on the repo seed only; the variant changes the fault.
    repo_rng = random.Random(f"{seed}/{language}/{domain}/{index}")
    table, packages = DOMAINS[domain]
    chosen = sorted(repo_rng.sample(range(len(table)), k=repo_rng.choice((2, 3, 4))))
    functions = []
    for i in chosen:
        name, params, expr = table[i]
        labels = CASE_LABELS[: repo_rng.choice((2, 3))]
        cases = []
        for label in labels:
            if label == "with_zero":
                args = tuple(0 if j == len(params) - 1 else repo_rng.randint(1, 9) for j in range(len(params)))
            elif label == "larger_values":
                args = tuple(repo_rng.randint(10, 60) for _ in params)
            else:
                args = tuple(repo_rng.randint(2, 9) for _ in params)
            cases.append((label, args, evaluate(expr, params, args)))
        functions.append(Function(name, params, expr, cases))
    spec = Spec(
        language=language,
        domain=domain,
        variant=variant,
        functions=functions,
        package=domain
        if index == 0
        else f"{domain}{['', '_core', '_kit', '_lib', '_svc'][index % 5]}{index // 5 or ''}",
        subfolder=f"{repo_rng.choice(SUBFOLDERS)}/{domain}"
        if repo_rng.random() < options.get("subfolder_p", 0.3)
        else "",
        suites=2 if len(functions) >= 3 and repo_rng.random() < options.get("suites_p", 0.5) else 1,
        verbose_lines=options.get("verbose_lines", 120) if repo_rng.random() < options.get("verbose_p", 0.5) else 0,
    )
    rng = random.Random(f"{seed}/{language}/{domain}/{index}/{variant}")
    if variant == "fail":
        # Pick a function and a flip that breaks at least one of its cases (a flip that changes nothing is no fault).
        for _ in range(50):
            k = rng.randrange(len(functions))
            new = mutate(functions[k].expr, rng)
            if new and any(evaluate(new, functions[k].params, a) != e for _, a, e in functions[k].cases):
                spec.mutated, spec.mutated_expr = k, new
                break
        else:
            raise ValueError(f"no failing mutation found for {language}/{domain}/{index}")
    elif variant == "broken":
        spec.mutated = rng.randrange(len(functions))
    elif variant == "missing-dep":
        spec.dependency = packages[rng.randrange(2)]
        if language == "node":
            spec.dependency = NODE_PACKAGES[spec.dependency]
    elif variant == "warnings":
        spec.warnings = rng.randint(1, 4)
    return spec


# -- rendering -----------------------------------------------------------------------------------------------
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


@dataclass
class Project:
    spec: Spec
    files: dict[str, str]
    facts: dict

    def write(self, root: Path) -> Path:
        for rel, text in self.files.items():
            path = root / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
        return root


def _expr(spec: Spec, k: int) -> str:
    f = spec.functions[k]
    return spec.mutated_expr if (spec.variant == "fail" and k == spec.mutated) else f.expr


def _suite_of(spec: Spec, k: int) -> int:
    return 0 if spec.suites == 1 or k < (len(spec.functions) + 1) // 2 else 1


def _value(spec: Spec, k: int, args: tuple[int, ...]) -> int:
    return evaluate(_expr(spec, k), spec.functions[k].params, args)


def _log_lines(spec: Spec) -> list[str]:
    return [f"[{spec.package}] reconciling batch {i:03d}: {17 + i % 5} records ok" for i in range(spec.verbose_lines)]


def render(spec: Spec) -> Project:
    out = Files()
    failing_cases: list[tuple[int, str, int]] = []  # (function index, label, line of its check) filled per language
    renderer = {"python": _python, "node": _node, "cmake": _cmake, "rust": _rust, "go": _go}[spec.language]
    info = renderer(spec, out, failing_cases)
    prefix = f"{spec.subfolder}/" if spec.subfolder else ""
    files = {prefix + path: "\n".join(lines) + "\n" for path, lines in out.files.items()}
    return Project(spec, files, _facts(spec, info, prefix))


def _facts(spec: Spec, info: dict, prefix: str) -> dict:
    """Ground truth from the spec plus the line numbers the renderer recorded (paths relative to the repo)."""
    facts: dict = {"project_root": spec.subfolder or "."}
    ids = info["ids"]  # [(function index, label, test id, check location)]
    compiled = spec.language in ("cmake", "rust", "go")
    if spec.variant in ("pass", "fail", "warnings"):
        failing = [(tid, loc) for k, label, tid, loc in ids if _case_fails(spec, k, label)]
        facts["tests"] = {"passed": len(ids) - len(failing), "failed": len(failing), "skipped": 0,
                          "failing": [tid for tid, _ in failing]}  # fmt: skip
        facts["exit_code"] = 1 if failing else 0
        if spec.language == "go" and failing:
            facts["exit_code"] = 1
        if failing:
            facts["error"] = {
                "type": info["assert_type"],
                "locations": [prefix + loc for _, loc in failing],
                "root_cause": prefix + info["root_cause"],
            }
        if compiled:
            facts["build"] = {"success": True, "errors": [], "warnings": spec.warnings}
    elif spec.variant == "broken":
        facts["build"] = {"success": False, "errors": [{"location": prefix + info["error_at"]}], "warnings": 0}
        facts["error"] = {"type": info["error_type"], "locations": [prefix + info["error_at"]],
                          "root_cause": prefix + info["error_at"]}  # fmt: skip
        facts["exit_code"] = 1
    elif spec.variant == "missing-dep":
        fix = {"python": "pip install", "node": "npm install"}[spec.language]
        facts["dependency"] = {"package": spec.dependency, "fix": f"{fix} {spec.dependency}"}
        facts["error"] = {"type": info["error_type"], "locations": [prefix + info["error_at"]],
                          "root_cause": prefix + info["error_at"]}  # fmt: skip
        facts["exit_code"] = 1
    return facts


def _case_fails(spec: Spec, k: int, label: str) -> bool:
    f = spec.functions[k]
    args, expected = next((a, e) for lab, a, e in f.cases if lab == label)
    return _value(spec, k, args) != expected


def _broken_expr(spec: Spec, k: int, language: str) -> str:
    """A compile/syntax error in function k's body, as a developer in mid-edit leaves it."""
    expr = spec.functions[k].expr
    if language == "cmake":
        return expr  # and the caller drops the semicolon
    if language in ("python", "node"):
        return expr.rsplit(" ", 1)[0]  # the last operand deleted: `quantity *`
    return f'{expr} + "{spec.functions[k].params[0]}"'  # rust, go: adding a string to an integer


def _python(spec: Spec, out: Files, _: list) -> dict:
    pkg = spec.package
    module = f"{pkg}/{spec.domain}.py"
    out.add("pyproject.toml", "[project]", f'name = "{pkg.replace("_", "-")}"', 'version = "0.3.0"',
            'requires-python = ">=3.9"', "", "[tool.pytest.ini_options]", 'pythonpath = ["."]', 'testpaths = ["tests"]')  # fmt: skip
    out.add(f"{pkg}/__init__.py", f'"""{spec.domain.title()} helpers."""')
    out.add(module, f'"""{spec.domain.title()} calculations used by the {pkg} service."""', "")
    info: dict = {"assert_type": "AssertionError"}
    if spec.dependency:
        info["error_at"] = f"{module}:{out.add(module, f'import {spec.dependency}')}"
        info["error_type"] = "ModuleNotFoundError"
        out.add(module, "")
    for k, f in enumerate(spec.functions):
        out.add(
            module, "", f"def {f.name}({', '.join(f.params)}):", f'    """{f.name.replace("_", " ").capitalize()}."""'
        )
        body = _broken_expr(spec, k, "python") if spec.variant == "broken" and k == spec.mutated else _expr(spec, k)
        line = out.add(module, f"    return {body}")
        if spec.variant == "broken" and k == spec.mutated:
            info["error_at"], info["error_type"] = f"{module}:{line}", "SyntaxError"
        if spec.variant == "fail" and k == spec.mutated:
            info["root_cause"] = f"{module}:{line}"
    ids = []
    for suite in range(spec.suites):
        test = f"tests/test_{spec.domain}{'' if suite == 0 else '_more'}.py"
        names = [f.name for k, f in enumerate(spec.functions) if _suite_of(spec, k) == suite]
        out.add(test, f"from {pkg}.{spec.domain} import {', '.join(names)}", "")
        if spec.verbose_lines:
            out.add(test, "", "def _replay_audit_log():",
                    f"    for i in range({spec.verbose_lines}):",
                    f'        print(f"[{pkg}] reconciling batch {{i:03d}}: {{17 + i % 5}} records ok")', "")  # fmt: skip
        for k, f in enumerate(spec.functions):
            if _suite_of(spec, k) != suite:
                continue
            for label, args, expected in f.cases:
                out.add(test, "", f"def test_{f.name}_{label}():")
                if spec.verbose_lines:
                    out.add(test, "    _replay_audit_log()")
                line = out.add(test, f"    assert {f.name}({', '.join(map(str, args))}) == {expected}")
                ids.append((k, label, f"{test}::test_{f.name}_{label}", f"{test}:{line}"))
    info["ids"] = ids
    return info


def _node(spec: Spec, out: Files, _: list) -> dict:
    module = f"src/{spec.domain}.js"
    out.add("package.json", "{", f'  "name": "{spec.package.replace("_", "-")}",', '  "version": "1.4.0",',
            '  "private": true,', '  "scripts": {"test": "node --test"}', "}")  # fmt: skip
    out.add(module, "'use strict';", f"// {spec.domain.title()} calculations used by the {spec.package} service.", "")
    info: dict = {"assert_type": "AssertionError"}
    if spec.dependency:
        info["error_at"] = f"{module}:{out.add(module, f'const dep = require({spec.dependency!r});')}"
        info["error_type"] = "Error: Cannot find module"
        out.add(module, "")
    for k, f in enumerate(spec.functions):
        params = ", ".join(camel(p) for p in f.params)
        expr = _broken_expr(spec, k, "node") if spec.variant == "broken" and k == spec.mutated else _expr(spec, k)
        for p in sorted(f.params, key=len, reverse=True):
            expr = re.sub(rf"\b{p}\b", camel(p), expr)
        out.add(module, f"function {camel(f.name)}({params}) {{")
        line = out.add(module, f"  return {expr};")
        out.add(module, "}", "")
        if spec.variant == "broken" and k == spec.mutated:
            info["error_at"], info["error_type"] = f"{module}:{line}", "SyntaxError"
        if spec.variant == "fail" and k == spec.mutated:
            info["root_cause"] = f"{module}:{line}"
    out.add(module, f"module.exports = {{ {', '.join(camel(f.name) for f in spec.functions)} }};")
    ids = []
    for suite in range(spec.suites):
        test = f"test/{spec.domain}{'' if suite == 0 else '-more'}.test.js"
        names = [camel(f.name) for k, f in enumerate(spec.functions) if _suite_of(spec, k) == suite]
        out.add(test, "const test = require('node:test');", "const assert = require('node:assert');",
                f"const {{ {', '.join(names)} }} = require('../{module[:-3]}');", "")  # fmt: skip
        if spec.verbose_lines:
            out.add(test, "function replayAuditLog() {", f"  for (let i = 0; i < {spec.verbose_lines}; i++) {{",
                    f"    console.log(`[{spec.package}] reconciling batch ${{String(i).padStart(3, '0')}}: "
                    "${17 + (i % 5)} records ok`);", "  }", "}", "")  # fmt: skip
        for k, f in enumerate(spec.functions):
            if _suite_of(spec, k) != suite:
                continue
            for label, args, expected in f.cases:
                name = f"{camel(f.name)} {label.replace('_', ' ')}"
                out.add(test, f"test('{name}', () => {{")
                if spec.verbose_lines:
                    out.add(test, "  replayAuditLog();")
                line = out.add(
                    test, f"  assert.strictEqual({camel(f.name)}({', '.join(map(str, args))}), {expected});"
                )
                out.add(test, "});", "")
                ids.append((k, label, name, f"{test}:{line}"))
    info["ids"] = ids
    return info


def _cmake(spec: Spec, out: Files, _: list) -> dict:
    lib, header, source = spec.package, f"include/{spec.domain}.h", f"src/{spec.domain}.c"
    out.add(header, f"#ifndef {spec.domain.upper()}_H", f"#define {spec.domain.upper()}_H", "")
    out.add(source, f'#include "{spec.domain}.h"', "")
    info: dict = {"assert_type": "assertion failed"}
    for k, f in enumerate(spec.functions):
        sig = f"long {f.name}({', '.join(f'long {p}' for p in f.params)})"
        out.add(header, sig + ";")
        out.add(source, f"{sig} {{")
        for w in range(spec.warnings if k == 0 else 0):
            out.add(source, f"    long scratch_{w} = {w};")
        expr = _broken_expr(spec, k, "cmake") if spec.variant == "broken" and k == spec.mutated else _expr(spec, k)
        semicolon = "" if spec.variant == "broken" and k == spec.mutated else ";"
        line = out.add(source, f"    return {expr}{semicolon}")
        out.add(source, "}", "")
        if spec.variant == "broken" and k == spec.mutated:
            info["error_at"], info["error_type"] = f"{source}:{line}", "compile error"
        if spec.variant == "fail" and k == spec.mutated:
            info["root_cause"] = f"{source}:{line}"
    out.add(header, "", "#endif")
    tests = []
    ids = []
    for suite in range(spec.suites):
        name = f"test_{spec.domain}{'' if suite == 0 else '_more'}"
        test = f"tests/{name}.c"
        tests.append(name)
        out.add(test, "#include <stdio.h>", "#include <string.h>", f'#include "{spec.domain}.h"', "")
        if spec.verbose_lines:
            out.add(test, "static void replay_audit_log(void) {", f"    for (int i = 0; i < {spec.verbose_lines}; i++)",
                    f'        printf("[{spec.package}] reconciling batch %03d: %d records ok\\n", i, 17 + i % 5);', "}", "")  # fmt: skip
        out.add(test, "int main(int argc, char **argv) {", '    const char *name = argc > 1 ? argv[1] : "";')
        if spec.verbose_lines:
            out.add(test, "    replay_audit_log();")
        for k, f in enumerate(spec.functions):
            if _suite_of(spec, k) != suite:
                continue
            for label, args, expected in f.cases:
                case = f"{f.name}_{label}"
                call = f"{f.name}({', '.join(map(str, args))})"
                out.add(test, f'    if (strcmp(name, "{case}") == 0) {{', f"        long got = {call};")
                line = out.add(test, f'        if (got != {expected}) {{ printf("{test}:%d: FAIL {call} == {expected}, '
                               f'got %ld\\n", __LINE__, got); return 1; }}')  # fmt: skip
                out.add(test, "        return 0;", "    }")
                ids.append((k, label, case, f"{test}:{line}"))
        out.add(test, '    printf("unknown test case %s\\n", name);', "    return 2;", "}")
    cm = out.add
    cm("CMakeLists.txt", "cmake_minimum_required(VERSION 3.16)", f"project({lib} C)", "enable_testing()",
       "add_compile_options(-Wall -Wextra)", f"add_library({lib} {source})", f"target_include_directories({lib} PUBLIC include)")  # fmt: skip
    for name in tests:
        cm("CMakeLists.txt", f"add_executable({name} tests/{name}.c)", f"target_link_libraries({name} {lib})")
    for k, _label, case, _ in ids:
        owner = tests[_suite_of(spec, k)]
        cm("CMakeLists.txt", f"add_test(NAME {case} COMMAND {owner} {case})")
    info["ids"] = ids
    return info


def _rust(spec: Spec, out: Files, _: list) -> dict:
    lib = "src/lib.rs"
    out.add("Cargo.toml", "[package]", f'name = "{spec.package}"', 'version = "0.2.0"', 'edition = "2021"', "",
            "[dependencies]")  # fmt: skip
    out.add(lib, f"//! {spec.domain.title()} calculations used by the {spec.package} service.", "")
    info: dict = {"assert_type": "panicked"}
    for k, f in enumerate(spec.functions):
        out.add(lib, f"pub fn {f.name}({', '.join(f'{p}: i64' for p in f.params)}) -> i64 {{")
        for w in range(spec.warnings if k == 0 else 0):
            out.add(lib, f"    let scratch_{w} = {w};")
        expr = _broken_expr(spec, k, "rust") if spec.variant == "broken" and k == spec.mutated else _expr(spec, k)
        line = out.add(lib, f"    {expr}")
        out.add(lib, "}", "")
        if spec.variant == "broken" and k == spec.mutated:
            info["error_at"], info["error_type"] = f"{lib}:{line}", "compile error"
        if spec.variant == "fail" and k == spec.mutated:
            info["root_cause"] = f"{lib}:{line}"
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
            out.add(path, f"{indent}fn replay_audit_log() {{", f"{indent}    for i in 0..{spec.verbose_lines} {{",
                    f'{indent}        println!("[{spec.package}] reconciling batch {{:03}}: {{}} records ok", i, 17 + i % 5);',
                    f"{indent}    }}", f"{indent}}}", "")  # fmt: skip
        for k, f in enumerate(spec.functions):
            if _suite_of(spec, k) != suite:
                continue
            for label, args, expected in f.cases:
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


def _go(spec: Spec, out: Files, _: list) -> dict:
    source = f"{spec.domain}.go"
    out.add("go.mod", f"module example.com/{spec.package}", "", "go 1.19")
    out.add(source, f"// Package {spec.package} holds the {spec.domain} calculations.", f"package {spec.package}", "")
    info: dict = {"assert_type": "test failed"}
    for k, f in enumerate(spec.functions):
        expr = _broken_expr(spec, k, "go") if spec.variant == "broken" and k == spec.mutated else _expr(spec, k)
        for p in sorted(f.params, key=len, reverse=True):
            expr = re.sub(rf"\b{p}\b", camel(p), expr)
        out.add(source, f"// {pascal(f.name)} computes the {f.name.replace('_', ' ')}.",
                f"func {pascal(f.name)}({', '.join(camel(p) for p in f.params)} int) int {{")  # fmt: skip
        line = out.add(source, f"\treturn {expr}")
        out.add(source, "}", "")
        if spec.variant == "broken" and k == spec.mutated:
            info["error_at"], info["error_type"] = f"{source}:{line}", "compile error"
        if spec.variant == "fail" and k == spec.mutated:
            info["root_cause"] = f"{source}:{line}"
    ids = []
    for suite in range(spec.suites):
        test = f"{spec.domain}{'' if suite == 0 else '_more'}_test.go"
        out.add(test, f"package {spec.package}", "", 'import "testing"', "")
        if spec.verbose_lines and suite == 0:
            out.add(test, "func replayAuditLog(t *testing.T) {", f"\tfor i := 0; i < {spec.verbose_lines}; i++ {{",
                    f'\t\tt.Logf("[{spec.package}] reconciling batch %03d: %d records ok", i, 17+i%5)', "\t}", "}", "")  # fmt: skip
        for k, f in enumerate(spec.functions):
            if _suite_of(spec, k) != suite:
                continue
            for label, args, expected in f.cases:
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


def fix_for(project: Project) -> dict | None:
    """The edit that repairs a `fail` project: its mutated line back to the line the passing variant has."""
    import dataclasses

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
