"""The run comparison of `make reproduce-check`: wall-clock aside, any other difference is reported with its line."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from terminus.analysis.notebook import FILES
from terminus.reproducibility import compare_cached, compare_runs

ROOT = Path(__file__).resolve().parents[1]


def write_run(root: Path, *, reward: float, duration: float, timing: str, runtime: float) -> Path:
    run = root / "results" / "smoke"
    (run / "training").mkdir(parents=True)
    (run / "collect").mkdir()
    (run / "eval").mkdir()
    (run / "training" / "summary.json").write_text(
        json.dumps({"sft": {"fact_recall": 0.5}, "grpo": {"reward_last": reward}, "train_runtime": runtime})
    )
    record = {"id": "t1", "duration_s": duration, "messages": [{"role": "tool", "content": f"2 passed in {timing}"}],
              "workspace": str(root / "results" / "smoke" / "tasks" / "repos" / "a")}  # fmt: skip
    (run / "collect" / "trajectories.jsonl").write_text(json.dumps(record) + "\n")
    (run / "eval" / "summary.csv").write_text(f"cell,resolve_rate,wall_s\nreader__none,0.5,{duration}\n")
    return run


def test_wall_clock_fields_timing_text_and_the_run_folder_do_not_count(tmp_path):
    a = write_run(tmp_path / "a", reward=0.25, duration=1.5, timing="0.03s", runtime=10.0)
    b = write_run(tmp_path / "b", reward=0.25, duration=2.9, timing="0.41s", runtime=13.0)
    result = compare_runs(a, b, ("training/summary.json", "collect", "eval/summary.csv"))
    assert result["differing"] == []
    assert result["identical"] == ["collect/trajectories.jsonl", "eval/summary.csv", "training/summary.json"]


def test_a_changed_figure_is_reported_with_its_first_differing_line(tmp_path):
    a = write_run(tmp_path / "a", reward=0.25, duration=1.5, timing="0.03s", runtime=10.0)
    b = write_run(tmp_path / "b", reward=0.5, duration=1.5, timing="0.03s", runtime=10.0)
    (b / "eval" / "summary.csv").write_text("cell,resolve_rate,wall_s\nreader__none,0.75,1.5\n")
    result = compare_runs(a, b, ("training/summary.json", "eval/summary.csv", "collect"))
    differing = {d["path"]: d for d in result["differing"]}
    assert set(differing) == {"training/summary.json", "eval/summary.csv"}
    assert "0.25" in differing["training/summary.json"]["a"] and "0.5" in differing["training/summary.json"]["b"]
    assert differing["eval/summary.csv"]["line"] == 2
    assert result["identical"] == ["collect/trajectories.jsonl"]


def test_a_file_only_one_run_has_differs(tmp_path):
    a = write_run(tmp_path / "a", reward=0.25, duration=1.5, timing="0.03s", runtime=10.0)
    b = write_run(tmp_path / "b", reward=0.25, duration=1.5, timing="0.03s", runtime=10.0)
    (a / "collect" / "extra.json").write_text("{}")
    result = compare_runs(a, b, ("collect",))
    assert [d["path"] for d in result["differing"]] == ["collect/extra.json"]


def test_a_copy_without_git_is_stamped_with_the_commit_it_copies(monkeypatch):
    from terminus.config import git_commit

    monkeypatch.delenv("TERMINUS_GIT_COMMIT", raising=False)
    own = git_commit()
    assert own != "unknown"
    monkeypatch.setenv("TERMINUS_GIT_COMMIT", "abc123def456")
    assert git_commit() == "abc123def456"


def test_caches_are_not_compared(tmp_path):
    runs = []
    for name, key in (("a", "0b0a"), ("b", "19ec")):  # the same verdicts cached under keys holding each folder's path
        run = write_run(tmp_path / name, reward=0.25, duration=1.0, timing="0.03s", runtime=1.0)
        (run / "judge" / "cache" / key[:2]).mkdir(parents=True)
        (run / "judge" / "cache" / key[:2] / f"{key}.json").write_text("{}")
        (run / "sft-data" / "train").mkdir(parents=True)
        (run / "sft-data" / "train" / f"cache-{key}.arrow").write_bytes(key.encode())
        (run / "sft-data" / "train" / "data-00000-of-00001.arrow").write_bytes(b"rows")
        runs.append(run)
    result = compare_runs(*runs, ("judge", "sft-data", "training/summary.json"))
    assert result["differing"] == []
    assert result["identical"] == ["sft-data/train/data-00000-of-00001.arrow", "training/summary.json"]


def smoke_tables(run: Path, commit: str, recall: float = 0.5) -> Path:
    """The tables results/cached holds (terminus.analysis.notebook.FILES), as a smoke run of `commit` writes them."""
    stamp = {"config_hash": "0d317d6a117a", "git_commit": commit, "run": "smoke"}
    tables = {
        "tasks/tasks.stats.json": {"n": 24, **stamp},
        "tasks/valid.validation.json": {"kept": 20, "wall_s": 3.2, **stamp},
        "judge/validity.json": {"agreement": 0.75, "note": f"The LLM judge here is {run}/models/base", **stamp},
        "training/summary.json": {"sft": {"fact_recall": recall}, "train_runtime": 12.5, **stamp},
        "eval/case_study.json": {"task_id": "node-a-fail", "with": {"git_commit": commit, "tokens": 812}},
    }
    for rel, data in tables.items():
        (run / rel).parent.mkdir(parents=True, exist_ok=True)
        (run / rel).write_text(json.dumps(data))
    for stage in ("sft", "grpo"):
        (run / "models" / stage).mkdir(parents=True)
        rows = [{"step": s, "num_tokens": 33126 + s, "loss": 2.5 / s, **stamp} for s in (1, 2)]
        (run / "models" / stage / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (run / "eval" / "records.jsonl").write_text(json.dumps({"task_id": "t1", "fact_recall": recall, **stamp}) + "\n")
    (run / "eval" / "summary.csv").write_text(f"cell,fact_recall,wall_s\nreader__sft,{recall},1.5\n")
    (run / "eval" / "noninferiority.csv").write_text(
        "benchmark,arm,reference,resolve_diff,lo,hi,margin,p_holm,verdict\n"
        "repair,reader__sft__full,reader__none__full,0.0,-0.7076,0.7076,0.025,1.0,inconclusive\n"
    )
    return run


def cache(run: Path, cached: Path) -> Path:
    """results/cached as `make cache-results` writes it (each table stamped with the run's commit)."""
    subprocess.run([sys.executable, str(ROOT / "scripts" / "cache_results.py"), str(run), str(cached)], check=True,
                   capture_output=True)  # fmt: skip
    return cached


def compare_cached_cli(run: Path, cached: Path) -> subprocess.CompletedProcess:
    script = ROOT / "scripts" / "compare_cached.py"
    return subprocess.run([sys.executable, str(script), str(run), str(cached)], capture_output=True, text=True)


def test_a_later_commit_reproducing_the_cached_tables_passes_stamps_and_checkout_aside(tmp_path):
    cached = cache(smoke_tables(tmp_path / "then" / "results" / "smoke", "3bfadab0c0de"), tmp_path / "cached")
    fresh = smoke_tables(tmp_path / "ci-clone" / "results" / "smoke", "173cb9d0c0de")  # other commit, other checkout
    summary = {"sft": {"fact_recall": 0.5}, "train_runtime": 99.0, "config_hash": "ffff", "git_commit": "x"}
    (fresh / "training" / "summary.json").write_text(json.dumps({**summary, "run": "smoke"}))
    done = compare_cached_cli(fresh, cached)
    assert done.returncode == 0, done.stdout
    assert f"{len(FILES)} tables" in done.stdout
    assert "machine of the run:   not stamped" in done.stdout  # the fresh summary above names no machine


def test_the_cached_folder_is_stamped_with_the_runs_machine(tmp_path):
    run = smoke_tables(tmp_path / "then" / "results" / "smoke", "3bfadab0c0de-dirty")
    summary = json.loads((run / "training" / "summary.json").read_text())
    machine = {"cpu": "AMD EPYC", "flags_sha": "fe5f311e38bf", "avx2": True, "avx512f": True, "threads": 2}
    (run / "training" / "summary.json").write_text(json.dumps(summary | {"machine": machine}))
    cached = cache(run, tmp_path / "cached")
    stamp = json.loads((cached / "stamp.json").read_text())
    assert stamp["commit"] == "3bfadab0c0de" and stamp["dirty"] is True and stamp["machine"] == machine
    assert set(stamp["tables"]) == set(FILES.values()) and stamp["config_hash"] == summary["config_hash"]
    assert json.loads((cached / "tasks" / "tasks.stats.json").read_text())["machine"] == machine  # JSON: stamped
    assert "machine" not in (cached / "eval" / "summary.csv").read_text()  # CSV rows keep their columns


def test_a_changed_figure_fails_naming_its_table(tmp_path):
    cached = cache(smoke_tables(tmp_path / "then" / "results" / "smoke", "3bfadab0c0de"), tmp_path / "cached")
    fresh = smoke_tables(tmp_path / "now" / "results" / "smoke", "173cb9d0c0de")
    metrics = fresh / "models" / "sft" / "metrics.jsonl"
    metrics.write_text(metrics.read_text().replace('"num_tokens": 33128', '"num_tokens": 33141'))
    done = compare_cached_cli(fresh, cached)
    assert done.returncode == 1
    assert f"1 of {len(FILES)} tables" in done.stdout
    assert "models/sft/metrics.jsonl: DIFFERS" in done.stdout
    assert "step 2: num_tokens 33141 against 33128 (exact)" in done.stdout
    result = compare_cached(fresh, cached)
    assert [d["path"] for d in result["differing"]] == ["models/sft/metrics.jsonl"]


def test_a_table_missing_from_the_cache_or_the_run_fails(tmp_path):
    cached = cache(smoke_tables(tmp_path / "then" / "results" / "smoke", "3bfadab0c0de"), tmp_path / "cached")
    fresh = smoke_tables(tmp_path / "now" / "results" / "smoke", "173cb9d0c0de")
    (cached / "eval" / "case_study.json").unlink()
    (fresh / "judge" / "validity.json").unlink()
    done = compare_cached_cli(fresh, cached)
    assert done.returncode == 1
    assert "eval/case_study.json: DIFFERS\n    file: run: present, cached: missing" in done.stdout
    assert "judge/validity.json: DIFFERS\n    file: run: missing, cached: present" in done.stdout
    differing = {d["path"]: d for d in compare_cached(fresh, cached)["differing"]}
    assert differing["eval/case_study.json"]["b"] == "missing" and differing["judge/validity.json"]["a"] == "missing"
    assert compare_cached_cli(fresh, tmp_path / "nowhere").returncode == 2


def load_script(name: str):
    spec = importlib.util.spec_from_file_location(name, ROOT / "scripts" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime


def test_the_cpu_hog_spins_its_workers_while_the_block_runs_and_stops_them(monkeypatch):
    check = load_script("reproduce_check")
    monkeypatch.setattr(check.shutil, "which", lambda name: None)  # the Python loops (stress-ng where installed)
    with check.cpu_hog(2) as procs:
        time.sleep(1.0)
        assert len(procs) == 2 and all(p.poll() is None for p in procs)
        assert all(cpu_seconds(p.pid) > 0.1 for p in procs), "a worker that does not spin loads nothing"
    assert all(p.returncode is not None for p in procs)
    assert all(not Path(f"/proc/{p.pid}").exists() for p in procs)
    assert check.hog_command(3) == [[sys.executable, "-c", "while True: pass"]] * 3
    monkeypatch.setattr(check.shutil, "which", lambda name: "/usr/bin/stress-ng")
    assert check.hog_command(3) == [["/usr/bin/stress-ng", "--cpu", "3", "--quiet"]]


def reproduce_check(workdir: Path, against: Path, out: Path, *flags: str) -> subprocess.CompletedProcess:
    """scripts/reproduce_check.py --against on a work folder whose fresh run is already there (a resumed check runs
    no DAG for it)."""
    cmd = [sys.executable, str(ROOT / "scripts" / "reproduce_check.py"), "--workdir", str(workdir), "--against",
           str(against), "--out", str(out), "--keep", *flags]  # fmt: skip
    return subprocess.run(cmd, capture_output=True, text=True)


def test_one_fresh_run_against_the_cached_tables_or_another_run(tmp_path):
    fresh = smoke_tables(tmp_path / "work" / "fresh" / "results" / "smoke", "173cb9d0c0de")
    cached = cache(smoke_tables(tmp_path / "then" / "results" / "smoke", "3bfadab0c0de"), tmp_path / "cached")
    out = tmp_path / "reproducibility.json"
    done = reproduce_check(tmp_path / "work", cached, out, "--load", "cpu-hog", "--workers", "2")
    assert done.returncode == 0, done.stdout + done.stderr
    result = json.loads(out.read_text())
    assert len(result["identical"]) == len(FILES) and result["differing"] == []
    assert result["load"] == {"kind": "cpu-hog", "workers": 2} and result["loaded_run"] == "fresh"
    assert result["against"] == str(cached) and result["wall_s"] == {}  # resumed: no DAG ran

    other = smoke_tables(tmp_path / "quiet" / "results" / "smoke", "173cb9d0c0de")  # a run folder: every table
    for run in (fresh, other):
        (run / "tasks" / "tasks.jsonl").write_text('{"id": "t1"}\n')
    (other / "tasks" / "tasks.jsonl").write_text('{"id": "t2"}\n')
    assert reproduce_check(tmp_path / "work", other, out).returncode == 1
    result = json.loads(out.read_text())
    assert [d["path"] for d in result["differing"]] == ["tasks/tasks.jsonl"]
    assert result["load"] == {"kind": "none"} and result["loaded_run"] is None
    assert "tasks/tasks.stats.json" in result["identical"] and "eval/records.jsonl" in result["identical"]


def test_against_refuses_a_missing_folder_and_workers_below_one(tmp_path):
    done = reproduce_check(tmp_path / "work", tmp_path / "nowhere", tmp_path / "out.json")
    assert done.returncode == 2 and "--against" in done.stderr and "no such folder" in done.stderr
    done = reproduce_check(tmp_path / "work", tmp_path, tmp_path / "out.json", "--load", "cpu-hog", "--workers", "0")
    assert done.returncode == 2 and "--workers must be at least 1" in done.stderr


def test_the_machine_stamp_names_the_cpu_its_kernels_and_threads(monkeypatch):
    import torch

    from terminus.config import stamp
    from terminus.determinism import machine, result_stamp

    monkeypatch.setenv("TERMINUS_THREADS", "3")
    found = machine()
    flags = Path("/proc/cpuinfo").read_text().split("\n\n")[0].split("flags", 1)[1].split("\n")[0].split()
    assert found["avx2"] == ("avx2" in flags) and found["avx512f"] == ("avx512f" in flags)
    assert len(found["flags_sha"]) == 12 and found["cpu"]
    assert found["torch"] == torch.__version__ and found["blas"] and found["cpu_capability"]
    assert found["threads"] == 3 and found["pins"]["TERMINUS_THREADS"] == "3"
    monkeypatch.setenv("TERMINUS_GIT_COMMIT", "abc123def456-dirty")
    assert result_stamp("c0ffee", {"tasks": "1d64"}) == {
        "commit": "abc123def456",
        "dirty": True,
        "config_hash": "c0ffee",
        "inputs": {"tasks": "1d64"},
        "machine": found,
    }
    assert "machine" not in stamp({"run": "smoke"})  # the rows' stamp, and the config hash, leave it out
