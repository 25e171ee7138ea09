"""The grader's host-side costs stay bounded whatever the tests print, through `terminus swe grade` (bwrap where
installed, else local): a log line that made the parsers backtrack for minutes, a 300 MB log (kept capped, in
bounded memory), a parse past its time budget; and output paths that cannot be written are refused before any
grading starts."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from terminus.cli import app
from terminus.sandbox.spec import SandboxSpec
from terminus.swe.benchmarks import load_instances
from terminus.swe.grade import grade_patch

from .test_boundary import BACKEND, _ledger_rows, _one_error_line, _write_jsonl, new_file

MB = 1024 * 1024


@pytest.fixture
def ledger(tmp_path, swe_data):
    """A dataset of one ledger instance, and its gold patch."""
    rows = _ledger_rows(swe_data, ["acme__ledger-101"])
    return _write_jsonl(tmp_path / "data.jsonl", rows), rows[0]["patch"]


def _printing(gold: str, body: str) -> str:
    """The gold patch plus a conftest whose terminal summary runs `body` (`w` writes a line to the test log),
    printed before pytest's own short summary (-rA), which the grader then has to find after it."""
    conftest = "def pytest_terminal_summary(terminalreporter):\n    w = terminalreporter.write\n" + "".join(
        f"    {line}\n" for line in body.splitlines()
    )
    return gold + new_file("conftest.py", conftest)


def _args(tmp_path: Path, dataset: Path, patch: str, name: str) -> list[str]:
    preds = _write_jsonl(tmp_path / f"{name}.jsonl", [{"instance_id": "acme__ledger-101", "model_patch": patch}])
    out = tmp_path / name
    args = ["swe", "grade", "--dataset", str(dataset), "--predictions", str(preds), "--sandbox", BACKEND]
    return [*args, "--out", str(out / "report.json"), "--logs", str(out / "logs")]


@pytest.mark.timeout(150)
def test_a_line_that_made_the_parser_backtrack_is_graded_in_seconds(tmp_path, ledger):
    """`"::" * 60000` took one grade 196 s; with a 1 MB line next to it the grade takes seconds, and is right."""
    dataset, gold = ledger
    body = "w('::' * 60000 + '\\n')\nw('::' * 500000 + ' x\\n')\nw('a::b ' + ' ' * 500000 + 'x ' * 5 + '\\n')"
    started = time.monotonic()
    result = CliRunner().invoke(app, _args(tmp_path, dataset, _printing(gold, body), "out"))
    took = time.monotonic() - started
    assert result.exit_code == 0, result.output
    assert "1 of 1 instances resolved" in result.output, result.output
    assert took < 60, f"the grade took {took:.0f} s"
    assert "::" * 60000 in (tmp_path / "out" / "logs" / "acme__ledger-101.log").read_text()


def test_a_parse_past_its_budget_is_the_grades_error(swe_data, tmp_path, ledger):
    dataset, gold = ledger
    (inst,) = load_instances("swebench-verified", dataset=str(dataset))
    result = grade_patch(inst, gold, SandboxSpec(BACKEND), parse_budget_s=0)
    assert not result.resolved and result.statuses == {}
    assert "pytest log parser passed its time budget of 0 s" in result.error
    assert "PASSED tests/test_money.py::test_add" in result.log  # the log is kept, for the reader


# Grades the two predictions in one process and prints its peak RSS after each: the second's growth over the first
# is what its log cost (the first pays for imports and the dataset loader).
MEASURE = """
import json, resource, sys
from typer.testing import CliRunner
from terminus.cli import app
peaks = []
for args in json.loads(sys.argv[1]):
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    peaks.append(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024)
print(json.dumps(peaks))
"""


@pytest.mark.timeout(300)
def test_a_300mb_log_is_kept_capped_in_bounded_memory(tmp_path, ledger):
    """A 300 MB test log once cost 1.6 GB of the grader's memory and went whole into --logs: now the grader reads
    its first and last 8 MiB, says in the kept log how much it left out, and still finds pytest's summary at
    the end."""
    dataset, gold = ledger
    size = 300 * MB
    body = f"for _ in range({size // MB}):\n    w(('y' * 1023 + '\\n') * 1024)"
    runs = [_args(tmp_path, dataset, gold, "small"), _args(tmp_path, dataset, _printing(gold, body), "big")]
    done = subprocess.run(
        [sys.executable, "-c", MEASURE, json.dumps(runs)], capture_output=True, text=True, timeout=280
    )
    assert done.returncode == 0, done.stderr[-3000:]
    small, big = json.loads(done.stdout.strip().splitlines()[-1])
    assert big - small < 100 * MB, f"grading a {size // MB} MB log grew the grader by {(big - small) // MB} MB"
    report = json.loads((tmp_path / "big" / "report.json").read_text())
    assert report["acme__ledger-101"]["resolved"] is True, report  # the summary after the flood was read
    kept = tmp_path / "big" / "logs" / "acme__ledger-101.log"
    assert kept.stat().st_size < 17 * MB
    text = kept.read_text()
    assert "bytes of this test log were left out here" in text
    left_out = int(text.split("[terminus: ", 1)[1].split(" ", 1)[0])
    assert left_out > size - 17 * MB
    assert all(len(line) in (0, 1023) for line in text.splitlines() if line.startswith("y"))  # lines kept whole


def test_output_paths_are_refused_before_grading(tmp_path, ledger):
    dataset, gold = ledger
    args = _args(tmp_path, dataset, gold, "out")
    folder = tmp_path / "folder"
    folder.mkdir()
    a_file = tmp_path / "file.txt"
    a_file.write_text("keep\n")
    cases = {
        "--out": (str(folder), "is a folder"),
        "--logs": (str(a_file), "exists and is not a folder"),
    }
    for flag, (value, why) in cases.items():
        changed = [value if args[i - 1] == flag else a for i, a in enumerate(args)]
        line = _one_error_line(CliRunner().invoke(app, changed))
        assert flag in line and why in line
    under_a_file = [str(a_file / "report.json") if args[i - 1] == "--out" else a for i, a in enumerate(args)]
    line = _one_error_line(CliRunner().invoke(app, under_a_file))
    assert "--out" in line and "is not a folder" in line
    assert a_file.read_text() == "keep\n" and list(folder.iterdir()) == []
    assert not (tmp_path / "out").exists()  # nothing graded, nothing written
    tasks = ["swe", "tasks", "--dataset", str(dataset), "--out", str(folder)]
    assert "is a folder" in _one_error_line(CliRunner().invoke(app, tasks))
