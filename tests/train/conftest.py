"""The training tests' corpus: a small synthetic one, its scripted teacher's trajectories and SFT dataset."""

from __future__ import annotations

from pathlib import Path

import pytest

from builders import synthetic_corpus
from terminus.collect.collect import collect
from terminus.models import make_policy
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
    collect(root / "tasks.jsonl", make_policy("scripted"), root / "traj.jsonl", concurrency=2, show_progress=False)
    build_sft_dataset(root / "traj.jsonl", root / "tasks.jsonl", root / "sft")
    return root / "tasks.jsonl", root / "sft"
