"""The training tests' corpus: a small synthetic one, its scripted teacher's trajectories and SFT dataset."""

from __future__ import annotations

from pathlib import Path

import pytest

from builders import synthetic_corpus
from terminus.collect.collect import collect
from terminus.models import make_policy
from terminus.sandbox.spec import SandboxSpec
from terminus.train.data import build_sft_dataset


@pytest.fixture(scope="session")
def sft_data(tmp_path_factory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("data")
    synthetic = {
        "languages": ["python", "go"],
        "repos_per_language": 3,
        "variants": ["pass", "fail"],
        "verbose_lines": 0,
    }
    synthetic_corpus(root, synthetic, {"train": 0.8, "val": 0.2, "test": 0.0})
    collect(
        root / "tasks.jsonl", make_policy("scripted"), root / "traj.jsonl", sandbox=SandboxSpec(), max_turns=10,
        concurrency=2, show_progress=False,
    )  # fmt: skip
    build_sft_dataset(root / "traj.jsonl", root / "tasks.jsonl", root / "sft")
    return root / "tasks.jsonl", root / "sft"


@pytest.fixture(scope="session")
def briefly_sft_model(tiny_model, sft_data, tmp_path_factory) -> Path:
    """The tiny model after 120 SFT steps on `sft_data`, exported: its rollouts differ in reward (a random model's
    all score 0, which gives GRPO no gradient). Made once for the GRPO tests."""
    from terminus.train.export import export

    from .helpers import run_sft

    root = tmp_path_factory.mktemp("sft")
    summary = run_sft(tiny_model, sft_data[1], root / "sft", "--max_steps", "120")
    export(Path(summary["model"]), root / "sft-merged", check_vllm=False)
    return root / "sft-merged"
