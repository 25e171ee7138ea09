"""Small real projects in several languages, each in a passing, a failing-tests and a not-compiling variant."""

from __future__ import annotations

from pathlib import Path


def _write(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def python_project(root: Path, variant: str) -> Path:
    body = {"pass": "return a + b", "fail": "return a - b", "broken": "return a +"}[variant]
    return _write(root, {
        "pyproject.toml": '[project]\nname = "ledger"\nversion = "0.1.0"\n[tool.pytest.ini_options]\npythonpath = ["."]\n',
        "ledger/__init__.py": "",
        "ledger/sums.py": f"def add(a, b):\n    {body}\n\n\ndef scale(a, k):\n    return a * k\n",
        "tests/test_sums.py": "from ledger.sums import add, scale\n\n\ndef test_add():\n    assert add(2, 3) == 5\n\n\n"
        "def test_add_negative():\n    assert add(-1, 1) == 0\n\n\ndef test_scale():\n    assert scale(2, 3) == 6\n",
    })  # fmt: skip


def node_project(root: Path, variant: str) -> Path:
    body = {"pass": "return a + b;", "fail": "return a - b;", "broken": "return a + ;"}[variant]
    return _write(root, {
        "package.json": '{"name": "ledger", "version": "1.0.0", "type": "commonjs"}\n',
        "src/sums.js": f"function add(a, b) {{\n  {body}\n}}\nmodule.exports = {{ add }};\n",
        "test/sums.test.js": "const test = require('node:test');\nconst assert = require('node:assert');\n"
        "const { add } = require('../src/sums');\n\ntest('adds two numbers', () => {\n  assert.strictEqual(add(2, 3), 5);\n});\n\n"
        "test('adds zero', () => {\n  assert.strictEqual(add(7, 0), 7);\n});\n",
    })  # fmt: skip


def cmake_project(root: Path, variant: str) -> Path:
    body = {"pass": "return a + b;", "fail": "return a - b;", "broken": "return a + b"}[variant]
    return _write(root, {
        "CMakeLists.txt": "cmake_minimum_required(VERSION 3.16)\nproject(ledger C)\nenable_testing()\n"
        "add_library(sums src/sums.c)\nadd_executable(test_sums tests/test_sums.c)\n"
        "target_link_libraries(test_sums sums)\nadd_test(NAME test_sums COMMAND test_sums)\n",
        "src/sums.c": f"int add(int a, int b) {{\n    {body}\n}}\n",
        "tests/test_sums.c": "#include <stdio.h>\nint add(int a, int b);\nint main(void) {\n"
        '    if (add(2, 3) != 5) { printf("tests/test_sums.c:4: FAIL add(2, 3) != 5\\n"); return 1; }\n    return 0;\n}\n',
    })  # fmt: skip


def rust_project(root: Path, variant: str) -> Path:
    body = {"pass": "a + b", "fail": "a - b", "broken": 'a + "b"'}[variant]
    return _write(root, {
        "Cargo.toml": '[package]\nname = "ledger"\nversion = "0.1.0"\nedition = "2021"\n\n[dependencies]\n',
        "src/lib.rs": f"pub fn add(a: i64, b: i64) -> i64 {{\n    {body}\n}}\n\n#[cfg(test)]\nmod tests {{\n"
        "    use super::*;\n    #[test]\n    fn adds() {\n        assert_eq!(add(2, 3), 5);\n    }\n"
        "    #[test]\n    fn adds_zero() {\n        assert_eq!(add(4, 0), 4);\n    }\n}\n",
    })  # fmt: skip


def go_project(root: Path, variant: str) -> Path:
    body = {"pass": "return a + b", "fail": "return a - b", "broken": 'return a + "b"'}[variant]
    return _write(root, {
        "go.mod": "module example.com/ledger\n\ngo 1.19\n",
        "sums.go": f"package ledger\n\nfunc Add(a, b int) int {{\n\t{body}\n}}\n",
        "sums_test.go": "package ledger\n\nimport \"testing\"\n\nfunc TestAdd(t *testing.T) {\n\tif Add(2, 3) != 5 {\n"
        "\t\tt.Fatalf(\"Add(2, 3) = %d\", Add(2, 3))\n\t}\n}\n\nfunc TestAddZero(t *testing.T) {\n"
        "\tif Add(4, 0) != 4 {\n\t\tt.Fatal(\"Add(4, 0)\")\n\t}\n}\n",
    })  # fmt: skip
