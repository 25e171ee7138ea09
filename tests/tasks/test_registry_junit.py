"""A registry package whose own test suite leaves a malformed junit report fails that package's build, with its
reason, through `terminus tasks build`; it does not crash the build."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import yaml

from terminus.config import ROOT

from .conftest import TALLY, tallyho_sdist

# The suite's own code (a conftest) replaces the junit report pytest just wrote with bytes that are not XML.
BREAKS_JUNIT = """import pathlib


def pytest_unconfigure(config):
    report = pathlib.Path(".terminus-junit.xml")
    if report.exists():
        report.write_bytes(b"<testsuite><testcase name='x'>\\xff not xml")
"""


def _cache(tmp_path: Path) -> Path:
    return tallyho_sdist(tmp_path, TALLY, extra={"conftest.py": BREAKS_JUNIT})


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
