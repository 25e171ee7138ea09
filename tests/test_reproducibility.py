"""The run comparison of `make reproduce-check`: wall-clock aside, any other difference is reported with its line."""

from __future__ import annotations

import json
from pathlib import Path

from terminus.reproducibility import compare_runs


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
