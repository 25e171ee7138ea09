"""Resume is honest (issue 16): failed episodes are retried, an output refuses inputs other than its own, the
printed counts are the file's, timings survive resumes, and a kill -9 leaves no temp folder for good."""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
from pathlib import Path

import pytest
from typer.testing import CliRunner

from builders import TERMINUS, cli_args, kill_when, lines_done, snapshot_task
from terminus.cli import app
from terminus.collect.runner import ResumableJsonl
from terminus.sandbox import tmproot
from terminus.tasks.record import write_tasks


def _tasks(root: Path, n: int = 3, name: str = "tasks.jsonl") -> Path:
    """n tiny tasks, each with its own snapshot folder (a README) next to the task file."""
    write_tasks(
        root / name, [snapshot_task(root, f"r{i}", {"README.md": f"project {i}\n"}, id=f"t{i}") for i in range(n)]
    )
    return root / name


def _collect_args(tasks: Path, out: Path) -> list[str]:
    return cli_args("collect", tasks=tasks, out=out, splits="train", sandbox="local", concurrency=1, quiet=True)


def _collect(tasks: Path, out: Path, *extra: str):
    return CliRunner().invoke(app, [*_collect_args(tasks, out), *extra])


def _endpoint_args(endpoint) -> list[str]:
    return cli_args("", **endpoint.policy_options, max_retries=0)


def _lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


@pytest.mark.timeout(60)
def test_crashed_episodes_are_retried_on_the_next_run(fault_endpoint, tmp_path):
    """The observed case: 3 crash records were kept as done; the rerun against a working endpoint sent 0 requests."""
    tasks, out = _tasks(tmp_path), tmp_path / "out" / "trajectories.jsonl"
    fault_endpoint.script = ["500"]
    failed = _collect(tasks, out, *_endpoint_args(fault_endpoint))
    assert failed.exit_code == 1, failed.output
    assert "3 crashed" in failed.output and "Traceback" not in failed.output
    assert [r["termination"] for r in _lines(out)] == ["crash"] * 3
    assert out.with_name(out.name + ".part").is_file()  # kept while records failed: deleting `out` loses nothing
    kept = _collect(tasks, out, *_endpoint_args(fault_endpoint), "--keep-failed")  # the opt-out: nothing is redone
    assert kept.exit_code == 1 and len(fault_endpoint.arrivals) == 3
    fault_endpoint.script = fault_endpoint.script * 3 + ["ok"]
    done = _collect(tasks, out, *_endpoint_args(fault_endpoint))
    assert done.exit_code == 0, done.output
    assert len(fault_endpoint.arrivals) == 6  # one request per crashed episode
    assert [r["termination"] for r in _lines(out)] == ["final_answer"] * 3
    assert "3 trajectories" in done.output and "3 with a final answer" in done.output
    assert not out.with_name(out.name + ".part").exists()


@pytest.mark.timeout(120)
def test_a_rerun_with_other_inputs_is_refused_unless_forced(fault_endpoint, tmp_path):
    tasks, out = _tasks(tmp_path), tmp_path / "out" / "trajectories.jsonl"
    assert _collect(tasks, out).exit_code == 0
    before = out.read_bytes()
    other_tasks = _tasks(tmp_path, 1, "one.jsonl")
    for extra, says in (
        (["--samples", "2"], "samples: 1 then, 2 now"),
        (_endpoint_args(fault_endpoint), "policy: 'scripted' then, 'openai:tiny' now"),
        (["--max-turns", "4"], "max_turns: 10 then, 4 now"),
    ):
        refused = _collect(tasks, out, *extra)
        assert refused.exit_code == 2, refused.output
        lines = refused.output.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error:") and says in lines[0] and "--force" in lines[0]
    refused = _collect(other_tasks, out)
    assert refused.exit_code == 2 and "tasks_sha256" in refused.output
    assert out.read_bytes() == before and not fault_endpoint.arrivals  # nothing ran, nothing changed
    # The observed case: a 1-task x 2-sample run into the same output reported "10 trajectories".
    forced = _collect(other_tasks, out, "--samples", "2", "--force")
    assert forced.exit_code == 0, forced.output
    assert [r["id"] for r in _lines(out)] == ["t0#0", "t0#1"]
    assert "2 trajectories" in forced.output
    assert len(_lines(out.with_name("trajectories.timings.jsonl"))) == 2


def test_timings_of_every_episode_survive_a_resume(tmp_path):
    out = tmp_path / "records.jsonl"
    first = ResumableJsonl(out)
    for key in ("a", "b"):
        first.add({"id": key}, {"id": key, "durations_s": [1.0]})
    first.close()  # killed here: finish() never ran
    second = ResumableJsonl(out)
    assert not second.done("c") and second.done("a")
    second.add({"id": "c"}, {"id": "c", "durations_s": [2.0]})
    second.finish()
    assert [t["id"] for t in _lines(tmp_path / "records.timings.jsonl")] == ["a", "b", "c"]
    assert not (tmp_path / "records.timings.jsonl.part").exists()


def test_a_missing_workspace_is_one_line_and_leaves_nothing(tmp_path):
    tasks = _tasks(tmp_path)
    (tmp_path / "repos" / "r1" / "README.md").unlink()
    (tmp_path / "repos" / "r1").rmdir()
    out = tmp_path / "out" / "trajectories.jsonl"
    roots_before = set(tmproot.run_root().iterdir())
    valid = tmp_path / "v.jsonl"
    for args in (
        ["collect", "--tasks", str(tasks), "--out", str(out), "--splits", "train", "--quiet"],
        ["tasks", "validate", "--tasks", str(tasks), "--out", str(valid), "--quiet"],
    ):
        result = CliRunner().invoke(app, args)
        assert result.exit_code == 2
        lines = result.output.strip().splitlines()
        assert len(lines) == 1 and "task t1" in lines[0] and "does not exist" in lines[0]
    assert not out.parent.exists() and not list(tmp_path.glob("v.*"))
    assert set(tmproot.run_root().iterdir()) == roots_before


@pytest.mark.timeout(300)
def test_temp_roots_of_a_killed_collect_are_removed_by_the_next_run(tmp_path):
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    env = {k: v for k, v in os.environ.items() if k != "TERMINUS_DEBUG"} | {"TMPDIR": str(tmp)}
    # A command that takes a while, so that an episode is running when the kill comes.
    makefile = {"Makefile": "test:\n\tsleep 1\n\techo ok\n"}
    tasks = [
        snapshot_task(tmp_path, f"r{i}", makefile, id=f"t{i}", language="c", query="run the tests") for i in range(4)
    ]
    write_tasks(tmp_path / "tasks.jsonl", tasks)
    out = tmp_path / "out" / "trajectories.jsonl"
    command = [TERMINUS, *_collect_args(tmp_path / "tasks.jsonl", out)]
    part = out.with_name(out.name + ".part")
    pid = kill_when(command, lambda: lines_done(part) >= 1, env)
    left = list(tmp.glob(f"{tmproot.PREFIX}{pid}-*"))
    assert left, "the killed run had a workspace root"  # what kill -9 leaves behind
    subprocess.run(command, env=env, check=True, capture_output=True, timeout=240)
    assert not any(p.exists() for p in left)
    assert not list(tmp.glob(f"{tmproot.PREFIX}*"))  # the rerun removed its own root when it exited
    records = _lines(out)
    assert len(records) == 4 and all(r["termination"] == "final_answer" for r in records)
    assert len(_lines(out.with_name("trajectories.timings.jsonl"))) == 4  # the killed run's timings are kept


def test_the_default_temp_dir_is_where_roots_go():
    assert tmproot.run_root().parent == Path(tempfile.gettempdir())
