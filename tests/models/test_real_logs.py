"""The scripted expert's log parsers on real captured output (tests/data/logs, sources and licences in its README):
each states the cause a developer needs, with its file:line and the expected and actual values the log shows."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from terminus.models.jslogs import js_test
from terminus.models.project import Declared, missing_fact
from terminus.models.scripted import JS_KEEP
from terminus.models.toolchains import any_command, c_build, cargo, ctest, go, not_installed
from terminus.models.toolchains import pytest as pytest_facts

LOGS = Path(__file__).parent.parent / "data" / "logs"


def log(name: str) -> str:
    return (LOGS / name).read_text()


def test_pytest_subtests_are_named_by_their_marker_and_their_parents_not_counted_again():
    facts = "; ".join(pytest_facts("python3 -m pytest -q", log("pytest9-subtests.log"), 1))
    assert "failing: tests/test_sub.py::test_values (k=2), tests/test_sub.py::test_msg [odd check]" in facts
    assert "more" not in facts  # the parents' "contains 1 failed subtest" lines are not failures of their own
    assert "AssertionError at tests/test_sub.py:4 (k=2 is too large)" in facts
    assert "assert (3 % 2) == 0" in facts


def test_unittest_subtests_with_parentheses_in_their_parameters_keep_their_id():
    facts = "; ".join(pytest_facts("python3 -m pytest -q", log("more-itertools-unittest-subtests.log"), 1))
    assert "failing: tests/test_more.py::LastTests::test_basic (iterable=range(0, 1))" in facts
    assert "AssertionError at tests/test_more.py:161 (0 != 7)" in facts


def test_a_missing_plugin_fixture_is_the_cause_not_each_error():
    facts = "; ".join(pytest_facts("python3 -m pytest -q", log("platformdirs-missing-fixture.log"), 1))
    assert "fixture 'mocker' not found (the pytest-mock plugin provides it: not installed)" in facts


def test_tap_spec_output_gives_counts_the_failure_and_expected_against_actual():
    facts = js_test("npm test", log("mri-tap-spec.log"), 1)
    assert facts[0] == "npm test: 83 passed, 1 failed"
    assert "failing: no" in facts
    assert "expected { moo: true, _: [] }, actual { _: [], moo: false }" in facts
    assert "first failure at test/index.js:7" in facts


def kept(name: str) -> str:
    """The log as the expert's terminal shows it: through the same filter the expert runs in the sandbox."""
    env = {**os.environ, "LOG": str(LOGS / name)}
    return subprocess.run(["bash", "-c", JS_KEEP], capture_output=True, text=True, env=env, check=True).stdout


@pytest.mark.parametrize("read", [log, kept], ids=["whole", "filtered"])
@pytest.mark.parametrize(
    ("name", "counts", "failing", "where"),
    [
        ("jest29-fail.log", "1 failed, 1 passed, 2 total", "adds numbers", "test/sum.test.js:2"),
        ("mocha10-fail.log", "1 passed, 1 failed", "sum › adds numbers", "test/sum.spec.js:4"),
    ],
)
def test_jest_and_mocha_state_the_failure_its_values_and_place(read, name, counts, failing, where):
    facts = js_test("npm test", read(name), 1)
    assert facts == [f"npm test: {counts}", f"failing: {failing}", "expected 4, actual 0", f"first failure at {where}"]


def test_unity_failures_name_the_test_function_with_its_file_and_line():
    facts = ctest("ctest --test-dir build --output-on-failure", log("cjson-unity-ctest.log"), 8)
    assert "ctest: 18 passed, 1 failed of 19" in facts
    assert (
        "failing test functions: cjson_get_object_item_should_get_object_items at tests/misc_tests.c:81 "
        "(Expected 2 Was 1)"
    ) in facts


def test_c_warnings_carry_their_file_and_line():
    facts = c_build("cmake --build build", log("cjson-gcc-warning.log"), 0)
    assert facts == ["build succeeded", "1 warning(s): cJSON.c:127 unused variable ‘unused_counter’"]


def test_cargo_offline_resolution_failure_is_stated_with_what_requires_it():
    facts = cargo("cargo build --offline", log("itoa-cargo-offline.log"), 101)
    assert facts == [
        "dependency resolution failed (offline mode): no matching package named `no-panic` found; "
        "required by itoa v1.0.18"
    ]


def test_cargo_warnings_carry_their_file_and_line():
    facts = cargo("cargo build --offline", log("fnv-cargo-warning.log"), 0)
    assert facts == ["build succeeded", "1 warning(s): lib.rs:124 unused variable: `unused`"]


def test_a_cargo_panic_states_left_and_right():
    facts = cargo("cargo test --offline", log("fnv-cargo-test-filtered.log"), 101)
    assert "failing: test::fnv_hash_standalone" in facts
    assert "first panic at lib.rs:539: assertion `left == right` failed" in facts
    assert "left: 8618312879776256743, right: 7" in facts


def test_go_names_the_skip_with_its_reason_and_the_failure_with_its_values():
    facts = go("go test -v ./...", log("xxhash-go-test-filtered.log"), 1)
    assert "failing tests: TestResetWithSeed" in facts
    assert "skipped: TestAllocs (xxhash_test.go:171: allocation counts vary under the race detector)" in facts
    # the skip's reason, logged just before it, is not taken for the failure's
    assert "first failure at xxhash_test.go:127: 0xd5da0abf833865a8 != 0xbc702371b7622e6f" in facts


def test_missing_things_get_a_developers_fix_never_an_install_of_the_project_or_a_path():
    listing = "./pyproject.toml\n./src/platformdirs/__init__.py\n./tests/test_api.py\n"
    ours = missing_fact("python", "E   ModuleNotFoundError: No module named 'platformdirs'", Declared(listing))
    assert ours == "'platformdirs' is the project itself (src/), not importable as run (fix: PYTHONPATH=src)"
    flat = Declared("./setup.py\n./calc/__init__.py\n")
    assert missing_fact("python", "ModuleNotFoundError: No module named 'calc'", flat).endswith("(fix: PYTHONPATH=.)")
    theirs = missing_fact("python", "E   ModuleNotFoundError: No module named 'appdirs'", Declared(listing))
    assert theirs == "missing dependency 'appdirs' (fix: pip install appdirs)"
    path = missing_fact("node", "Error: Cannot find module '../lib'", Declared("./package.json\n"))
    assert "install" not in path and "'../lib'" in path
    assert not_installed("sh: 1: bundt: not found") == "bundt"
    assert not_installed("bash: line 1: uvu: command not found") == "uvu"
    node = Declared("./package.json\n./yarn.lock\n")
    assert missing_fact("node", "sh: 1: uvu: not found", node).endswith("fix: yarn install)")


def test_make_without_a_test_target_says_so():
    assert any_command("make test", log("make-no-test-target.log"), 2) == [
        "failed",
        "the Makefile has no 'test' target",
    ]
