"""The paper's real-repository corpus through the ordinary corpus stage: the SWE-rebench-V2 selection (rows in its
published schema), validated in the sandbox, becomes tasks beside the synthetic ones, with their snapshots."""

from __future__ import annotations

import json

import pytest
import yaml
from typer.testing import CliRunner

from terminus.cli import app
from terminus.runspec import load_run
from terminus.sandbox import pull as pull_module
from terminus.sandbox.bwrap import bwrap_path
from terminus.swe.corpus import build_swe_corpus
from terminus.swe.validate import EnvironmentDropError, check_environment_drops
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


@pytest.mark.docker
def test_the_tasks_stage_fails_when_instances_drop_for_their_environment(swe_data, tmp_path, docker_engine,
                                                                         monkeypatch):  # fmt: skip
    """Images absent from the node (and pulling off) drop every instance for its environment: the stage stops,
    naming the count and the reason, instead of building a corpus without them; a share allowed passes."""
    root, _ = swe_data
    monkeypatch.setenv("DOCKER_HOST", docker_engine)
    rows = [json.loads(line) for line in (root / "rebench-v2.jsonl").read_text().splitlines()]
    absent = tmp_path / "absent.jsonl"
    image, rows = "127.0.0.1:9/terminus-absent:1", [r | {"repo_path": str(root / r["repo_path"])} for r in rows]
    absent.write_text("".join(json.dumps(r | {"image_name": image}) + "\n" for r in rows))
    swe = {"enabled": True, "dataset": str(absent), "validate": True}
    raw = {
        "run": "t",
        "sandbox": "docker",
        "sandbox_pull": "never",
        "tasks": {"synthetic": {"enabled": False}, "registry": {"enabled": False}, "swe": swe},
    }
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(raw))
    out = tmp_path / "tasks" / "tasks.jsonl"
    with pytest.raises(EnvironmentDropError) as err:
        build_corpus(load_run(tmp_path / "config.yaml"), out, show_progress=False, swe_source=build_swe_corpus)
    message = str(err.value)
    assert f"{len(rows)} of {len(rows)} SWE instances dropped for environment reasons, over the allowed 5%" in message
    assert image in message and "pulling is off" in message
    report = json.loads((out.parent / "swe" / "tasks.validation.json").read_text())
    assert report["dropped_by_cause"]["environment"] == len(rows)  # every reason is kept for reading
    raw["tasks"]["swe"]["max_environment_drop"] = 1.0
    raw["tasks"]["synthetic"] = {"languages": ["python"], "repos_per_language": 1, "variants": ["fail"]}
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(raw))
    tasks = build_corpus(load_run(tmp_path / "config.yaml"), out, show_progress=False, swe_source=build_swe_corpus)
    assert tasks and not [t for t in tasks if t.id.startswith("swe-")]


def test_environment_drops_up_to_the_allowed_share_pass():
    reasons = {f"i{n}": "environment: SandboxError: no image" for n in range(2)} | {"i9": "FAIL_TO_PASS passes"}
    check_environment_drops({"instances": 40, "reasons": reasons}, 0.05, "r.json")  # 2 of 40: 5%
    reasons["i3"] = "environment: SandboxError: no image"
    with pytest.raises(EnvironmentDropError, match=r"3 of 40 SWE instances .* reasons: SandboxError: no image\. "):
        check_environment_drops({"instances": 40, "reasons": reasons}, 0.05, "r.json")


@pytest.mark.docker
def test_swe_pull_pre_pulls_the_selections_images_and_reports_each(swe_data, tmp_path, docker_engine, monkeypatch):
    root, _ = swe_data
    monkeypatch.setenv("DOCKER_HOST", docker_engine)
    monkeypatch.setattr(pull_module, "PULL_BACKOFF_S", 0.0)
    monkeypatch.setattr(pull_module, "_failed", {})
    rows = [json.loads(line) for line in (root / "rebench-v2.jsonl").read_text().splitlines()]
    image = "127.0.0.1:9/terminus-absent:1"
    dataset = tmp_path / "rows.jsonl"  # the committed row's image (the host image, built) and one no registry has
    dataset.write_text("".join(json.dumps(r | {"instance_id": f"{r['instance_id']}-{i}", "image_name": name}) + "\n"
                               for r in rows for i, name in enumerate([r["image_name"], image])))  # fmt: skip
    raw = {"run": "t", "tasks": {"swe": {"enabled": True, "dataset": str(dataset)}}}
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(raw))
    out = tmp_path / "pulled.json"
    args = [
        "swe",
        "pull",
        "--benchmark",
        "swe-rebench-v2",
        "--config",
        str(tmp_path / "config.yaml"),
        "--out",
        str(out),
    ]
    result = CliRunner().invoke(app, args)
    assert result.exit_code != 0 and "1 present, 0 pulled, 1 failed" in result.output
    assert f"1 of 2 images of swe-rebench-v2 are not on this node: docker image {image!r} is not" in result.output
    report = json.loads(out.read_text())
    assert report["present"] == [rows[0]["image_name"]] and list(report["failed"]) == [image]
