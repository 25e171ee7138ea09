"""The fixture repositories, built once per session, and the family rows next to them (repo_path is relative)."""

from __future__ import annotations

import json
import shutil

import pytest

from .repos import DATA, build_all, rows


@pytest.fixture(scope="session")
def swe_data(tmp_path_factory):
    root = tmp_path_factory.mktemp("swe")
    built = build_all(root)
    # The committed rows name these very commits and patches: the repositories are rebuilt byte for byte.
    for family, family_rows in rows(built).items():
        committed = [json.loads(line) for line in (DATA / f"{family}.jsonl").read_text().splitlines()]
        assert committed == family_rows, f"{family}: rows are stale; run python -m tests.swe.repos"
        shutil.copy(DATA / f"{family}.jsonl", root / f"{family}.jsonl")
    shutil.copy(DATA / "sharp.csv", root / "sharp.csv")
    return root, built
