"""`terminus view`: a run folder (teacher rollouts with their verdicts, eval records) as static pages, checked in a
real headless browser: the episode's text, a <details> opened by the page's own script, untrusted output kept as
text, and a screenshot."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from builders import snapshot_task
from terminus.cli import app
from terminus.collect.collect import collect
from terminus.config import ROOT
from terminus.io import write_jsonl_atomic
from terminus.judge.scorer import Scorer
from terminus.models import make_policy
from terminus.sandbox.spec import SandboxSpec
from terminus.tasks.record import write_tasks

INJECTED = '<script>document.title="pwned"</script><img src=x onerror=alert(1)>'  # printed by a test, as it is
CHROMIUM_FLAGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]  # fmt: skip


@pytest.fixture(scope="module")
def chromium() -> str:
    """Debian's chromium: installed here when missing and we may (root with apt-get), else the test is skipped."""
    found = shutil.which("chromium")
    if found is None and os.getuid() == 0 and shutil.which("apt-get"):
        env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
        subprocess.run(["apt-get", "install", "-y", "-qq", "chromium"], env=env, capture_output=True, timeout=900)
        found = shutil.which("chromium")
    if found is None:
        pytest.skip("chromium is not installed and cannot be here (not root, or no apt-get): scripts/sysdeps.sh")
    return found


def browser(chromium: str, profile: Path, *args: str) -> str:
    done = subprocess.run(
        [chromium, *CHROMIUM_FLAGS, f"--user-data-dir={profile}", *args],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> Path:
    """A run folder: one task whose test output carries markup and runs long, the scripted teacher's rollout of it,
    its verdict, and two eval records."""
    root = tmp_path_factory.mktemp("view")
    noisy = "\\n".join(f"log line {i}" for i in range(400))
    test = (
        f"def test_a():\n    assert 1\n\n\ndef test_b():\n    print({INJECTED!r})\n    print('{noisy}')\n"
        "    assert 2 + 2 == 5, 'arithmetic <b>broke</b>'\n"
    )
    facts = {"tests": {"passed": 1, "failed": 1, "failing": ["test_app.py::test_b", "test_app.py::test_c"]}}
    run = root / "run"
    files = {"test_app.py": test, "pyproject.toml": "[project]\nname = 'app'\nversion = '0'\n"}
    query = "Run the tests and tell me what fails."
    task = snapshot_task(run / "tasks", "r0", files, id="py-app-fail-tests", query=query, facts=facts, split="train")
    write_tasks(run / "tasks" / "valid.jsonl", [task])
    trajectories = run / "collect" / "trajectories.jsonl"
    collect(run / "tasks" / "valid.jsonl", make_policy("scripted"), trajectories, splits=("train",),
            sandbox=SandboxSpec("local"), max_turns=10, concurrency=4, show_progress=False)  # fmt: skip
    records = [json.loads(x) for x in trajectories.read_text().splitlines()]
    write_jsonl_atomic(run / "judge" / "teacher_verdicts.jsonl", Scorer(tasks={task.id: task}).score(records))
    cached = [json.loads(x) for x in (ROOT / "tests/data/view_records.jsonl").read_text().splitlines()]
    cached[0]["subagent_episodes"][0]["answer"] += "\n" + INJECTED
    first = cached[0]["subagent_episodes"][0]  # as records now keep it: how each command ended
    first["turns"] = [{"command": c, "exit_code": 8, "timed_out": False} for c in first["commands"]]
    write_jsonl_atomic(run / "eval" / "cells" / "reader__scripted__full__repair__0.jsonl", cached)
    return run


def test_view_writes_an_index_and_one_page_per_episode(run, tmp_path):
    result = CliRunner().invoke(app, ["view", str(run), "--out", str(tmp_path / "site")])
    assert result.exit_code == 0, result.output
    index = (tmp_path / "site" / "index.html").read_text()
    assert "teacher rollouts (collect)" in index and "eval cell reader__scripted__full__repair__0" in index
    pages = sorted((tmp_path / "site" / "episodes").glob("*.html"))
    assert len(pages) == 3
    for href in re.findall(r'href="(episodes/[^"]+)"', index):
        assert (tmp_path / "site" / href).is_file()
    page = next(p for p in pages if "py-app-fail-tests" in p.read_text() and "Verdict" in p.read_text()).read_text()
    # the rollout: query, each command with its exit status and timing, the elided-lines note, the answer
    assert "Run the tests and tell me what fails." in page and "exit 1" in page and " s</span>" in page
    assert re.search(r"\d+ lines of output elided", page)
    assert "Final answer" in page and "test_b" in page
    # the verdict: facts found and missed (test_c never failed, so no answer can state it)
    found, missed = page.split("Found:")[1].split("Missed:")
    assert "passed=1" in found and "test=test_app.py::test_c" in missed.split("Wrong claims")[0]
    # untrusted text stays text: one <script> element per page, the page's own
    assert (
        "<script>document.title" not in page
        and "&lt;script&gt;document.title=&quot;pwned&quot;&lt;/script&gt;" in page
    )
    assert page.count("<script>") == 1 and "<img src=x" not in page
    assert "http://" not in page and "https://" not in page  # nothing loaded from outside
    cell = next(p for p in pages if "cmake-geometry-fail-tests" in p.read_text()).read_text()
    assert "reader__scripted__full__repair__0" in cell and cell.count("<script>") == 1
    assert "<th>main agent</th><th>subagent</th>" in cell and "exit 8" in cell  # the record's turns
    assert "&lt;script&gt;document.title" in cell  # the answer the main agent received, escaped


def test_view_of_a_bad_path_is_one_line(tmp_path):
    missing = CliRunner().invoke(app, ["view", str(tmp_path / "nope"), "--out", str(tmp_path / "o")])
    assert missing.exit_code == 2 and missing.output.startswith("error: ") and "does not exist" in missing.output
    other = tmp_path / "other.jsonl"
    other.write_text('{"hello": 1}\n')
    bad = CliRunner().invoke(app, ["view", str(other), "--out", str(tmp_path / "o")])
    assert bad.exit_code == 2 and "neither trajectories nor eval records" in bad.output


def test_view_opens_in_a_headless_browser(run, tmp_path, chromium):
    site = tmp_path / "site"
    assert CliRunner().invoke(app, ["view", str(run), "--out", str(site)]).exit_code == 0
    page = next(p for p in (site / "episodes").glob("*.html") if "Verdict" in p.read_text())
    closed = browser(chromium, tmp_path / "profile", "--dump-dom", page.as_uri())
    opened = browser(chromium, tmp_path / "profile", "--dump-dom", page.as_uri() + "#cmd-2")
    assert re.search(r'<details id="cmd-2"[^>]*\bopen\b', opened) and not re.search(
        r'<details id="cmd-2"[^>]*\bopen\b', closed
    )
    assert "<title>py-app-fail-tests · terminus</title>" in opened  # the injected script never ran
    assert '&lt;script&gt;document.title="pwned"&lt;/script&gt;' in opened
    assert len(re.findall(r"<script\b", opened)) == 1 and "<img" not in opened
    shot = tmp_path / "page.png"
    browser(chromium, tmp_path / "profile", f"--screenshot={shot}", "--window-size=1200,900", page.as_uri() + "#all")
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 20_000


def test_the_screenshot_script_renders_results_cached(tmp_path, chromium):
    if not (ROOT / "results/cached/eval/records.jsonl").is_file():
        pytest.skip("results/cached/ is empty")
    shot = tmp_path / "view.png"
    done = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks/view_screenshot.py"), "--out", str(shot)],
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 20_000


def test_an_exec_trajectory_is_named_by_its_repository(tmp_path):
    repo = tmp_path / "my-calculator"
    repo.mkdir()
    (repo / "test_calc.py").write_text("def test_add():\n    assert 1 + 1 == 3\n")
    saved = tmp_path / "episode.json"
    query = ["--query", "run the tests", "--sandbox", "local", "--trajectory", str(saved)]
    done = CliRunner().invoke(app, ["exec", "--repo", str(repo), *query])
    assert done.exit_code == 0, done.output
    result = CliRunner().invoke(app, ["view", str(saved), "--out", str(tmp_path / "site")])
    assert result.exit_code == 0, result.output
    (page,) = (tmp_path / "site" / "episodes").glob("*.html")
    text = page.read_text()
    assert "<title>my-calculator · terminus</title>" in text and "<h1>my-calculator</h1>" in text
    assert json.loads(saved.read_text())["id"] not in text.split("</h1>")[0]  # not the hex id
    index = (tmp_path / "site" / "index.html").read_text()
    assert ">my-calculator</a>" in index
