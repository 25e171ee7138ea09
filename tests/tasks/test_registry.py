"""Registry mutants: junit ground truth against a quarantined baseline, reproducible, bad inputs named."""

from __future__ import annotations

import pytest

from terminus.sandbox.spec import SandboxSpec
from terminus.tasks.registry import RegistryUnavailable, download, mutants_for


def test_mutants_have_junit_ground_truth_identical_over_two_runs(registry_cache, tmp_path):
    runs = [
        mutants_for(
            "tallyho",
            "1.0.0",
            cache=registry_cache,
            workdir=tmp_path / f"w{i}",
            count=2,
            seed=0,
            sandbox=SandboxSpec(),
        )
        for i in range(2)
    ]
    for report in runs:
        assert report.status == "ok", report.reason
        assert report.baseline_quarantined == 1  # test_already_broken
        assert len(report.mutants) == 2
    assert [m.facts for m in runs[0].mutants] == [m.facts for m in runs[1].mutants]
    for mutant in runs[0].mutants:
        tests = mutant.facts["tests"]
        assert tests["failed"] == len(tests["failing"]) > 0
        assert tests["passed"] + tests["failed"] == 5  # the quarantined test is not collected
        assert not any("already_broken" in t for t in tests["failing"])
        assert mutant.facts["error"]["root_cause"] == f"tallyho/__init__.py:{mutant.line}"
        assert all(t.startswith("tests/test_tally.py::") for t in tests["failing"])
        mutated = (tmp_path / "w0" / f"mutant-{runs[0].mutants.index(mutant)}" / mutant.file).read_text()
        assert mutant.replacement in mutated.splitlines()[mutant.line - 1]


def test_unreachable_registry_is_reported_not_raised(tmp_path, monkeypatch):
    monkeypatch.setenv("PIP_INDEX_URL", "http://127.0.0.1:9/simple")
    monkeypatch.setenv("PIP_EXTRA_INDEX_URL", "http://127.0.0.1:9/simple")
    monkeypatch.setenv("PIP_FIND_LINKS", "")
    monkeypatch.setenv("PIP_RETRIES", "0")
    monkeypatch.setenv("PIP_TIMEOUT", "2")
    with pytest.raises(RegistryUnavailable, match=r"pip download no-such-package-terminus==1\.0 failed"):
        download("no-such-package-terminus", "1.0", tmp_path)
    report = mutants_for(
        "no-such-package-terminus",
        "1.0",
        cache=tmp_path,
        workdir=tmp_path / "w",
        count=1,
        seed=0,
        sandbox=SandboxSpec(),
    )
    assert report.status == "unavailable" and "pip download" in report.reason
