"""A C library built with CMake, its tests run by ctest (one test executable per suite, a case per argument)."""

from __future__ import annotations

from terminus.tasks.synthetic.common import Files, body, cases_of, is_broken, mark, suite_of
from terminus.tasks.synthetic.spec import Spec


def render(spec: Spec, out: Files) -> dict:
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
        semicolon = "" if is_broken(spec, k) else ";"  # C's mid-edit break: the statement left unterminated
        line = out.add(source, f"    return {body(spec, k)}{semicolon}")
        out.add(source, "}", "")
        mark(spec, k, info, f"{source}:{line}", "compile error")
    out.add(header, "", "#endif")
    tests = []
    ids = []
    for suite in range(spec.suites):
        name = f"test_{spec.domain}{'' if suite == 0 else '_more'}"
        test = f"tests/{name}.c"
        tests.append(name)
        out.add(test, "#include <stdio.h>", "#include <string.h>", f'#include "{spec.domain}.h"', "")
        if spec.verbose_lines:
            out.add(
                test,
                "static void replay_audit_log(void) {",
                f"    for (int i = 0; i < {spec.verbose_lines}; i++)",
                f'        printf("[{spec.package}] reconciling batch %03d: %d records ok\\n", i, 17 + i % 5);',
                "}",
                "",
            )
        out.add(test, "int main(int argc, char **argv) {", '    const char *name = argc > 1 ? argv[1] : "";')
        if spec.verbose_lines:
            out.add(test, "    replay_audit_log();")
        for k, f, label, args, expected in cases_of(spec, suite):
            case = f"{f.name}_{label}"
            call = f"{f.name}({', '.join(map(str, args))})"
            out.add(test, f'    if (strcmp(name, "{case}") == 0) {{', f"        long got = {call};")
            line = out.add(
                test,
                f'        if (got != {expected}) {{ printf("{test}:%d: FAIL {call} == {expected}, '
                f'got %ld\\n", __LINE__, got); return 1; }}',
            )
            out.add(test, "        return 0;", "    }")
            ids.append((k, label, case, f"{test}:{line}"))
        out.add(test, '    printf("unknown test case %s\\n", name);', "    return 2;", "}")
    cm = out.add
    cm(
        "CMakeLists.txt",
        "cmake_minimum_required(VERSION 3.16)",
        f"project({lib} C)",
        "enable_testing()",
        "add_compile_options(-Wall -Wextra)",
        f"add_library({lib} {source})",
        f"target_include_directories({lib} PUBLIC include)",
    )
    for name in tests:
        cm("CMakeLists.txt", f"add_executable({name} tests/{name}.c)", f"target_link_libraries({name} {lib})")
    for k, _label, case, _ in ids:
        owner = tests[suite_of(spec, k)]
        cm("CMakeLists.txt", f"add_test(NAME {case} COMMAND {owner} {case})")
    info["ids"] = ids
    return info
