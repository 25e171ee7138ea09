"""The paper's real-repository corpus through the ordinary corpus stage: the SWE-rebench-V2 selection (rows in its
published schema), validated in the sandbox, becomes tasks beside the synthetic ones, with their snapshots."""

from __future__ import annotations

import json

import pytest
import yaml

from terminus.runspec import load_run
from terminus.sandbox.bwrap import bwrap_path
from terminus.swe.corpus import build_swe_corpus
from terminus.tasks.build import build_corpus


@pytest.mark.skipif(bwrap_path() is None, reason="bubblewrap is not installed")
def test_tasks_build_includes_the_validated_swe_selection(swe_data, tmp_path):
    root, _ = swe_data
    swe = {"enabled": True, "dataset": str(root / "rebench-v2.jsonl"), "validate": True}
    synthetic = {"languages": ["python"], "repos_per_language": 1, "variants": ["fail"]}
    raw = {
        "run": "t",
        "sandbox": "bwrap",
        "tasks": {"synthetic": synthetic, "registry": {"enabled": False}, "swe": swe},
    }
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(raw))
    out = tmp_path / "tasks" / "tasks.jsonl"
    tasks = build_corpus(load_run(tmp_path / "config.yaml"), out, show_progress=False, swe_source=build_swe_corpus)
    swe = [t for t in tasks if t.id.startswith("swe-")]
    assert swe and {t.source for t in swe} == {"manifest"} and any(t.source == "synthetic" for t in tasks)
    assert {t.task_type for t in swe} >= {"test-execution", "error-diagnosis"}
    assert all(t.workspace_path(out).is_dir() for t in swe if t.workspace)  # re-rooted beside tasks.jsonl
    failing = next(t for t in swe if t.task_type == "error-diagnosis").facts["tests"]["failing"]
    assert failing  # the dataset's FAIL_TO_PASS, observed failing at base + test patch
    stats = json.loads((out.parent / "swe" / "tasks.stats.json").read_text())
    assert stats["validation"]["kept"] >= 1 and stats["by_type"]["test-execution"]["paper"] == 2692
