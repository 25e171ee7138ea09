"""A registry package whose own test suite leaves a malformed junit report fails that package's build, with its
reason, through `terminus tasks build`; it does not crash the build."""

from __future__ import annotations

import subprocess
import sys
import tarfile
from pathlib import Path

import yaml

from terminus.config import ROOT

from .conftest import TALLY, TESTS

# The suite's own code (a conftest) replaces the junit report pytest just wrote with bytes that are not XML.
BREAKS_JUNIT = """import pathlib


def pytest_unconfigure(config):
    report = pathlib.Path(".terminus-junit.xml")
    if report.exists():
        report.write_bytes(b"<testsuite><testcase name='x'>\\xff not xml")
"""


def _cache(tmp_path: Path) -> Path:
    src = tmp_path / "build" / "tallyho-1.0.0"
    (src / "tallyho").mkdir(parents=True)
    (src / "tallyho" / "__init__.py").write_text(TALLY)
    (src / "tests").mkdir()
    (src / "tests" / "test_tally.py").write_text(TESTS)
    (src / "conftest.py").write_text(BREAKS_JUNIT)
    (src / "pyproject.toml").write_text('[project]\nname = "tallyho"\nversion = "1.0.0"\n')
    cache = tmp_path / "cache"
    cache.mkdir()
    with tarfile.open(cache / "tallyho-1.0.0.tar.gz", "w:gz") as tar:
        tar.add(src, arcname="tallyho-1.0.0")
    return cache


def test_malformed_junit_fails_the_package_with_its_reason(tmp_path):
    packages = tmp_path / "packages.yaml"
    packages.write_text("- {name: tallyho, version: 1.0.0}\n")
    registry = {"enabled": True, "packages": str(packages), "cache": str(_cache(tmp_path)), "mutants_per_package": 1}
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump({"run": "t", "tasks": {"synthetic": {"enabled": False}, "registry": registry}}))
    command = [sys.executable, "-m", "terminus.cli", "tasks", "build", "--config", str(config)]
    command += ["--out", str(tmp_path / "out" / "tasks.jsonl"), "--quiet"]
    done = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, timeout=600)
    output = done.stdout + done.stderr
    assert "Traceback" not in output, output
    assert "tallyho==1.0.0 gives no tasks" in output and "junit report" in output, output
    assert "not well-formed XML" in output, output
