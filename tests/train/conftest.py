"""The training tests' corpus: a small synthetic one, its scripted teacher's trajectories and SFT dataset."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from terminus.collect.collect import collect
from terminus.config import load_config
from terminus.models import make_policy
from terminus.tasks.build import build_corpus
from terminus.train.data import build_sft_dataset


@pytest.fixture(scope="session")
def sft_data(tmp_path_factory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("data")
    raw = {
        "run": "t",
        "tasks": {
            "synthetic": {
                "languages": ["python", "go"],
                "repos_per_language": 3,
                "variants": ["pass", "fail"],
                "verbose_lines": 0,
            },
            "registry": {"enabled": False},
            "splits": {"train": 0.8, "val": 0.2, "test": 0.0},
        },
    }
    (root / "config.yaml").write_text(yaml.safe_dump(raw))
    build_corpus(load_config(root / "config.yaml"), root / "tasks.jsonl", show_progress=False)
    collect(root / "tasks.jsonl", make_policy("scripted"), root / "traj.jsonl", concurrency=2, show_progress=False)
    build_sft_dataset(root / "traj.jsonl", root / "tasks.jsonl", root / "sft")
    return root / "tasks.jsonl", root / "sft"
