"""The scripted expert end to end (`terminus exec --policy scripted --sandbox bwrap`) on small copies of real public
projects (tests/fixtures/projects, sources and licences in its README), with faults planted in a copy: it runs what
a developer would run (the project's test script, its src layout, the named test) and reports the cause.

These reproduce issue 44's failures on other projects: `node --test` instead of `npm test`, `pip install <the
project>`, another test's failure for a named one, a dropped offline resolution error, warnings without places.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from terminus.sandbox.bwrap import bwrap_path

PROJECTS = Path(__file__).parent.parent / "fixtures" / "projects"

pytestmark = pytest.mark.skipif(bwrap_path() is None, reason="bwrap is not installed on this machine")


def needs(program: str) -> None:
    if shutil.which(program) is None:
        pytest.skip(f"{program} is not installed on this machine")


def plain_python(monkeypatch) -> None:
    """The machine's own python3, as a developer's shell finds it, not terminus's venv: that venv has its own copy
    of platformdirs and pytest plugins of its own, so the project would not run as its developer runs it (`make test`
    puts the venv first on PATH). Skipped, saying why, where that python3 has no pytest or already has platformdirs."""
    venv = str(Path(sys.prefix) / "bin")
    path = os.pathsep.join(p for p in os.environ.get("PATH", "").split(os.pathsep) if p and p != venv)
    monkeypatch.setenv("PATH", path)
    python = shutil.which("python3", path=path)
    if python is None:
        pytest.skip("no python3 outside terminus's venv on this machine")
    probe = "import importlib.util as u; print(bool(u.find_spec('pytest')), bool(u.find_spec('platformdirs')))"
    found = subprocess.run([python, "-c", probe], capture_output=True, text=True).stdout.split()
    if found != ["True", "False"]:
        pytest.skip(f"{python} needs pytest and no platformdirs of its own for this check (has: {found})")


def copy(name: str, tmp_path: Path, plant: dict[str, tuple[str, str]] | None = None) -> Path:
    """A copy of a fixture project with faults planted: file -> (old text, new text)."""
    repo = shutil.copytree(PROJECTS / name, tmp_path / name)
    for file, (old, new) in (plant or {}).items():
        text = (repo / file).read_text()
        assert old in text, (file, old)
        (repo / file).write_text(text.replace(old, new, 1))
    return repo


def ask(repo: Path, query: str) -> tuple[list[str], str]:
    """(the commands the answer names, the whole answer) from `terminus exec`."""
    from typer.testing import CliRunner

    from terminus.cli import app

    argv = ["exec", "--policy", "scripted", "--sandbox", "bwrap", "--repo", str(repo), "--query", query]
    done = CliRunner().invoke(app, argv)
    assert done.exit_code == 0, done.output
    answer = done.output.split("<final_answer>", 1)[1].split("</final_answer>", 1)[0]
    commands = [line.removeprefix("Command: ") for line in answer.splitlines() if line.startswith("Command: ")]
    return commands, answer


def test_node_runs_the_package_json_test_script_and_names_the_uninstalled_runner(tmp_path):
    needs("npm")
    commands, answer = ask(copy("mri", tmp_path), "run npm test and tell me what fails")
    assert commands[1] == "cat package.json" and commands[2].startswith("npm test")
    assert "test script: `tape test/*.js | tap-spec`; package manager: npm; exit code 0." in answer
    assert "'bundt' is not installed (the project's dependencies are not installed; fix: npm install)" in answer
    assert "node --test" not in answer and "npm install ." not in answer and "npm install src" not in answer


def test_node_uses_the_lockfiles_package_manager(tmp_path):
    needs("npm")
    repo = copy("mri", tmp_path)
    (repo / "yarn.lock").write_text("# yarn lockfile v1\n")
    commands, answer = ask(repo, "Run the tests")
    assert commands[2].startswith("yarn test") and "package manager: yarn; exit code 0." in answer


def test_python_src_layout_runs_with_pythonpath_and_reports_the_real_missing_module(tmp_path, monkeypatch):
    plain_python(monkeypatch)
    repo = copy("platformdirs", tmp_path)
    commands, answer = ask(repo, "Run the tests and tell me what fails and why")
    assert "src layout (platformdirs under src/)" in answer
    assert commands[-1].startswith("PYTHONPATH=src python3 -m pytest -q")
    assert "missing dependency 'appdirs' (fix: pip install appdirs)" in answer
    assert "pip install platformdirs" not in answer


def test_python_honours_a_named_command_and_a_named_variable(tmp_path, monkeypatch):
    plain_python(monkeypatch)
    repo = copy("platformdirs", tmp_path)
    commands, answer = ask(repo, "Run `python -m pytest tests/test_api.py` and tell me why it fails")
    assert commands[-1].startswith("python -m pytest tests/test_api.py")  # exactly as asked
    assert "'platformdirs' is the project itself (src/), not importable as run (fix: PYTHONPATH=src)" in answer
    assert "pip install platformdirs" not in answer
    commands, answer = ask(repo, "Run tests/test_api.py with PYTHONPATH=src and report")
    assert commands[-1].startswith("PYTHONPATH=src python3 -m pytest -q tests/test_api.py")
    assert " passed;" in answer and "failed" not in answer


def test_rust_offline_resolution_error_is_the_answer(tmp_path):
    needs("cargo")
    _, answer = ask(copy("itoa", tmp_path), "Build it and report warnings")
    assert "dependency resolution failed (offline mode): no matching package named `no-panic` found" in answer
    assert "warning(s)" not in answer  # nothing was compiled, so no count of warnings


FNV_FAULTS = {
    "lib.rs": (
        "let FnvHasher(mut hash) = *self;\n",
        "let FnvHasher(mut hash) = *self;\n        let unused = bytes.len();\n",
    )
}


def test_rust_warnings_are_named_with_their_place(tmp_path):
    needs("cargo")
    _, answer = ask(copy("fnv", tmp_path, FNV_FAULTS), "Build it and report warnings")
    assert "build succeeded; 1 warning(s): lib.rs:124 unused variable: `unused`" in answer


def test_rust_named_test_is_scoped_and_its_values_stated(tmp_path):
    needs("cargo")
    faults = {"lib.rs": ('fnv_hash(b"hello world"), fnv1a(b"hello world")', 'fnv_hash(b"hello world"), 7')}
    commands, answer = ask(copy("fnv", tmp_path, faults), "why does fnv_hash_standalone fail?")
    assert commands[-1].startswith("cargo test --offline --no-fail-fast fnv_hash_standalone")
    assert "cargo test: 0 passed, 1 failed; failing: test::fnv_hash_standalone" in answer
    assert "left: 8618312879776256743, right: 7" in answer


XXHASH_FAULTS = {
    "xxhash_test.go": ("d.ResetWithSeed(123)", "d.ResetWithSeed(124)"),
}


def test_go_named_test_is_answered_about_that_test_only(tmp_path):
    needs("go")
    repo = copy("xxhash", tmp_path, XXHASH_FAULTS)
    commands, answer = ask(repo, "why does TestReset fail?")
    assert commands[-1].startswith("go test -v -run '^TestReset$' ./...")
    assert "go test: 1 passed, 0 failed" in answer and "TestResetWithSeed" not in answer
    commands, answer = ask(repo, "why does TestResetWithSeed fail?")
    assert "failing tests: TestResetWithSeed" in answer
    assert "first failure at xxhash_test.go:127: 0xd5da0abf833865a8 != 0xbc702371b7622e6f" in answer


def test_go_reports_skips(tmp_path):
    needs("go")
    skip = ("func TestAllocs(t *testing.T) {\n", 'func TestAllocs(t *testing.T) {\n\tt.Skip("not measured here")\n')
    _, answer = ask(copy("xxhash", tmp_path, {"xxhash_test.go": skip}), "Run the tests")
    assert "go test: 6 passed, 0 failed" in answer
    assert "skipped: TestAllocs (xxhash_test.go:171: not measured here)" in answer
