"""`terminus training-summary` runs its models through the policy eval uses: `vllm` serves each model once for its
held-out episodes (which call it concurrently), `transformers` loads it in the process; both give the summary."""

from __future__ import annotations

import json
import shutil
import subprocess

import pytest

from builders import TERMINUS, cli_args, synthetic_corpus
from terminus.sandbox.spec import SandboxSpec
from terminus.tasks.record import load_tasks
from terminus.train.evaluate import held_out as held_out_summary

LOCAL = SandboxSpec("local")


@pytest.fixture(scope="module")
def held_out(tmp_path_factory):
    root = tmp_path_factory.mktemp("summary")
    synthetic = {"languages": ["python"], "repos_per_language": 2, "variants": ["fail"], "verbose_lines": 0}
    tasks = synthetic_corpus(root, synthetic, {"train": 0.0, "val": 0.0, "test": 1.0}, sandbox="local")
    (root / "metrics.jsonl").write_text("".join(json.dumps({"step": s, "reward": s / 10}) + "\n" for s in (1, 2)))
    return tasks


@pytest.mark.slow
@pytest.mark.parametrize("policy", ["vllm", "transformers"])
def test_the_held_out_summary_runs_its_models_through_the_policy_eval_uses(held_out, tiny_model, tmp_path, policy):
    if policy == "vllm":
        pytest.importorskip("vllm")
    out = tmp_path / "training" / "summary.json"
    options = {
        "base": tiny_model,
        "sft": tiny_model,
        "grpo": tiny_model,
        "grpo_metrics": held_out.parent / "metrics.jsonl",
    }
    argv = cli_args("training-summary", tasks=held_out, out=out, config=held_out.parent / "config.yaml", **options)
    done = subprocess.run(
        [TERMINUS, *argv, "--max-new-tokens", "24", "--max-turns", "2", "--policy", policy, "--concurrency", "4"],
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    summary = json.loads(out.read_text())
    test_tasks = [t for t in load_tasks(held_out) if t.split == "test"]
    assert all(summary[name]["n"] == len(test_tasks) for name in ("base", "sft", "grpo"))
    assert summary["grpo"]["steps"] == 2
    served = sorted(p.name for p in (out.parent / "logs").glob("vllm-*.log"))
    assert served == (["vllm-base.log", "vllm-grpo.log", "vllm-sft.log"] if policy == "vllm" else [])


def test_an_unknown_policy_is_refused_in_one_line(held_out, tmp_path):
    argv = cli_args(
        "training-summary", tasks=held_out, base="b", sft="s", grpo="g", grpo_metrics="m", out=tmp_path / "s"
    )
    done = subprocess.run([TERMINUS, *argv, "--policy", "openai"], capture_output=True, text=True, timeout=120)
    assert done.returncode != 0 and done.stderr.strip().splitlines() == [
        "error: --policy openai: choose transformers or vllm"
    ]


def test_held_out_episodes_are_kept_for_their_model_and_run_again_for_a_model_trained_since(
    held_out, tiny_model, tmp_path
):
    """The held-out episodes are the summary's progress (not an output): a rerun resumes them for the same model,
    and runs them again once the model's files changed (a retrained GRPO model at the same path)."""
    model = tmp_path / "model"
    shutil.copytree(tiny_model, model)
    out = tmp_path / "held_out_grpo.jsonl"

    def run() -> list[dict]:
        held_out_summary(str(model), held_out, out, max_turns=2, max_new_tokens=8, concurrency=2, sandbox=LOCAL)
        return [json.loads(line) for line in out.read_text().splitlines()]

    first = run()
    # mark the finished episodes: one kept by a rerun keeps its mark, one run again has none
    out.write_text("".join(json.dumps(r | {"mark": 1}) + "\n" for r in first))
    assert [r.get("mark") for r in run()] == [1] * len(first) != []
    (model / "config.json").write_text((model / "config.json").read_text() + "\n")  # written again since
    assert [r.get("mark") for r in run()] == [None] * len(first)


def test_train_tasks_add_the_sft_models_figures_on_a_seeded_draw_of_its_training_tasks(tiny_model, tmp_path):
    """`--train-tasks N`: the SFT model also runs N of its training tasks (sft.train_fact_recall), the same N on
    every call; without it the summary is as before (no train_ keys)."""
    from terminus.config import stamp
    from terminus.train.evaluate import training_summary

    synthetic = {"languages": ["python"], "repos_per_language": 4, "variants": ["fail"], "verbose_lines": 0}
    tasks = synthetic_corpus(tmp_path, synthetic, {"train": 0.5, "val": 0.0, "test": 0.5}, sandbox="local")
    assert len([t for t in load_tasks(tasks) if t.split == "train"]) > 2
    metrics = tmp_path / "metrics.jsonl"
    metrics.write_text(json.dumps({"step": 1, "reward": 0.1}) + "\n")
    models = {"sft": str(tiny_model), "grpo": str(tiny_model)}
    common = {"stamp": stamp({"run": "t"}), "max_turns": 1, "max_new_tokens": 8, "concurrency": 1, "sandbox": LOCAL}
    out = tmp_path / "a" / "summary.json"
    summary = training_summary(tasks, models, metrics, out, train_tasks=2, **common)
    assert summary["sft"]["train_n"] == 2 and 0 <= summary["sft"]["train_fact_recall"] <= 1
    assert "train_final_answer_rate" in summary["sft"] and "train_n" not in summary["grpo"]
    drawn = [json.loads(x)["task_id"] for x in (out.parent / "train_sft.jsonl").read_text().splitlines()]
    train_ids = {t.id for t in load_tasks(tasks) if t.split == "train"}
    assert len(drawn) == 2 and set(drawn) <= train_ids
    plain = training_summary(tasks, models, metrics, tmp_path / "b" / "summary.json", **common)
    assert not any(k.startswith("train_") for k in plain["sft"])
