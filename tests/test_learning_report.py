"""The learning report: benchmarks/learning.py checks the targets from the runs' summaries (a miss is reported as
a miss), and the training notebook's functions summarise the seeds with intervals."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from terminus.analysis import training
from terminus.collect.provenance import file_sha256
from terminus.config import ROOT


def fake_run(folder: Path, seed: int, sft_recall: float, rise: float) -> None:
    """One learning run's tables, in the layout the training stages write (`rise`: GRPO's before/after difference
    on its tasks, whose interval is +-0.05 around it)."""
    summary = {
        "base": {"final_answer_rate": 0.0, "fact_recall": 0.0, "n": 50},
        "sft": {
            "final_answer_rate": 0.95,
            "fact_recall": sft_recall,
            "n": 50,
            "train_fact_recall": sft_recall + 0.3,
            "train_final_answer_rate": 0.97,
            "train_n": 60,
        },
        "grpo": {
            "final_answer_rate": 0.96,
            "fact_recall": sft_recall + 0.02,
            "n": 50,
            "reward_first": 0.4,
            "reward_last": 0.4 + rise,
            "steps": 8,
            "reward_curve": [[s, 0.4 + rise * s / 8] for s in range(1, 9)],
        },
    }
    summary |= {"git_commit": "0123456789ab", "config_hash": f"cfg{seed}", "run": folder.name}
    (folder / "training").mkdir(parents=True)
    (folder / "training" / "summary.json").write_text(json.dumps(summary))
    (folder / "models" / "sft").mkdir(parents=True)
    (folder / "models" / "grpo").mkdir(parents=True)
    (folder / "models" / "sft" / "metrics.jsonl").write_text(
        "".join(json.dumps({"step": s, "loss": 3.0 / s + seed * 0.01}) + "\n" for s in range(1, 11))
    )
    ci95 = [round(rise - 0.05, 4), round(rise + 0.05, 4)]
    report = {"tasks": 8, "samples_per_task": 8, "before": 0.3, "after": 0.3 + rise, "diff": rise, "ci95": ci95}
    (folder / "models" / "grpo" / "before_after.json").write_text(json.dumps({"report": report}))
    (folder / "models" / "grpo" / "metrics.jsonl").write_text(
        "".join(json.dumps({"step": s, "reward": 0.4 + rise * s / 8, "reward_std": 0.1}) + "\n" for s in range(1, 9))
    )


def report(tmp_path: Path, runs: dict[int, tuple[float, float]], easy: Path | None = None) -> dict:
    for seed, (recall, rise) in runs.items():
        fake_run(tmp_path / f"learning-{seed}", seed, recall, rise)
    out = tmp_path / "learning.json"
    cmd = [
        sys.executable,
        str(ROOT / "benchmarks" / "learning.py"),
        "--prefix",
        str(tmp_path / "learning"),
        "--seeds",
        *map(str, runs),
        "--out",
        str(out),
        "--cache",
        str(tmp_path / "cached" / "learning"),
        "--easy-reward",
        str(easy or tmp_path / "no-easy-reward.json"),
    ]
    subprocess.run(cmd, check=True, capture_output=True, text=True)
    return json.loads(out.read_text())


def test_targets_met_and_missed(tmp_path):
    easy = tmp_path / "easy_reward.json"
    easy.write_text(json.dumps({"steps": 12, "first": 0.5, "last": 0.9, "passed": True, "margin": 0.2}))
    met = report(tmp_path / "a", {0: (0.6, 0.1), 1: (0.55, 0.12), 2: (0.7, 0.0)}, easy)
    assert met["seeds"] == [0, 1, 2] and [r["seed"] for r in met["per_seed"]] == [0, 1, 2]
    assert met["easy_reward"] == {"steps": 12, "first": 0.5, "last": 0.9, "passed": True}
    assert met["per_seed"][0]["grpo"]["reward_last_quarter"] == pytest.approx(0.5)
    assert met["per_seed"][0]["sft"]["train_fact_recall"] == pytest.approx(0.9)
    ba = met["per_seed"][1]["grpo"]["before_after"]
    assert set(ba) == {"tasks", "samples_per_task", "before", "after", "diff", "ci95"} and ba["diff"] == 0.12
    assert all(t["met"] for t in met["targets"].values()), met["targets"]  # 2 of 3 intervals above 0 is enough
    missed = report(tmp_path / "b", {0: (0.2, 0.1), 1: (0.3, 0.0), 2: (0.25, -0.1)}, tmp_path / "none.json")
    assert missed["easy_reward"] is None and not missed["targets"]["easy_reward_check_passes"]["met"]
    assert not missed["targets"]["sft_train_fact_recall_every_seed"]["met"]  # 0.5 and 0.55 < 0.8
    assert not missed["targets"]["grpo_before_after_ci_above_zero"]["met"]  # one of three
    assert met["targets"]["grpo_held_out_recall_vs_sft"]["value"] == [0.02, 0.02, 0.02]


def test_grpo_below_sft_held_out_on_two_seeds_misses(tmp_path):
    for seed, (sft, grpo) in enumerate([(0.3, 0.2), (0.3, 0.31), (0.4, 0.1)]):
        fake_run(tmp_path / f"learning-{seed}", seed, sft, 0.1)
        path = tmp_path / f"learning-{seed}" / "training" / "summary.json"
        summary = json.loads(path.read_text())
        summary["grpo"]["fact_recall"] = grpo
        path.write_text(json.dumps(summary))
    out = tmp_path / "learning.json"
    script = str(ROOT / "benchmarks" / "learning.py")
    args = ["--prefix", str(tmp_path / "learning"), "--out", str(out), "--easy-reward", str(tmp_path / "none.json")]
    subprocess.run([sys.executable, script, *args], check=True, capture_output=True)
    target = json.loads(out.read_text())["targets"]["grpo_held_out_recall_vs_sft"]
    assert target["value"] == [-0.1, 0.01, -0.3] and not target["met"]


def test_notebook_functions_read_the_cached_learning_tables(tmp_path):
    report(tmp_path, {0: (0.5, 0.1), 1: (0.6, 0.1), 2: (0.7, 0.1)})
    runs = training.load_learning(tmp_path / "cached")
    assert sorted(runs) == [0, 1, 2]
    table = training.learning_table(runs)
    sft = table[(table["model"] == "sft") & (table["metric"] == "fact_recall")].iloc[0]
    assert sft["mean"] == pytest.approx(0.6) and sft["ci95"] == pytest.approx(4.303 * 0.1 / 3**0.5, abs=1e-3)
    fig = training.plot_learning(runs)
    assert len(fig.axes) == 4  # SFT loss, GRPO reward, held-out recall, GRPO before/after
    assert runs[1]["before_after"]["diff"] == 0.1
    assert training.load_learning(tmp_path / "nothing-here") is None
    # each cached table carries its run's stamp (scripts/check_results.py reads it), as the smoke tables do
    seed1 = tmp_path / "cached" / "learning" / "seed-1"
    before_after = json.loads((seed1 / "models__grpo__before_after.json").read_text())
    assert before_after["git_commit"] == "0123456789ab" and before_after["run"] == "learning-1"
    rows = [json.loads(x) for x in (seed1 / "models__sft__metrics.jsonl").read_text().splitlines()]
    assert rows and all(r["git_commit"] == "0123456789ab" and r["config_hash"] == "cfg1" for r in rows)


def test_the_report_keeps_the_controls_and_stamps_itself(tmp_path):
    """learning.json is written by two benchmarks: learning.py (the runs) keeps the controls' sections that
    copy_control.py wrote, and stamps the file; each row carries issue 45's keys, null where a summary predates
    them (these fake summaries have no usable-answer rate)."""
    out = tmp_path / "learning.json"
    controls = {"copy_control": {"per_seed": [{"seed": 0}]}, "grpo_control": {"per_seed": []}}
    out.write_text(json.dumps({"per_seed": ["old"], **controls}))
    data = report(tmp_path, {0: (0.5, 0.1), 1: (0.6, 0.1)})
    assert data["copy_control"] == controls["copy_control"] and data["grpo_control"] == controls["grpo_control"]
    assert set(data["stamp"]) >= {"commit", "dirty", "config_hash", "inputs", "machine"}
    inputs = data["stamp"]["inputs"]  # what was read, by its hash: each run's summary among them
    summary = str(tmp_path / "learning-1" / "training" / "summary.json")
    assert data["stamp"]["config_hash"] and inputs[summary] == file_sha256(Path(summary))
    row = data["per_seed"][0]
    assert row["held_out_recall_sft"] == {"mean": None, "lo": None, "hi": None, "n": 0}  # no episodes written here
    empty = {"mean": None, "lo": None, "hi": None, "n": 0}
    assert row["usable_answer_rate"] == {"sft": empty, "grpo": empty}
    assert row["held_out_turns"] == {"sft": None, "grpo": None}
    assert row["fact_token_acc"] == {"sft": None, "grpo": None}  # no model folders in these fake runs
    assert set(row) >= {"held_out_recall_grpo", "p_command", "p_stated_given_printed"}
