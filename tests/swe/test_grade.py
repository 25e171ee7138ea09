"""Grading on real toolchains (pytest, go test, node --test) in bwrap and docker: the gold patch resolves, the
empty patch and a partial fix do not; `terminus swe grade` end to end; validation keeps the good rows and drops
the planted broken one; predictions files in the official formats."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from terminus.cli import app
from terminus.sandbox.bwrap import bwrap_path
from terminus.sandbox.spec import SandboxSpec
from terminus.swe.benchmarks import load_instances
from terminus.swe.environment import grading_limits, instance_sandbox
from terminus.swe.gitops import patch_from_tree
from terminus.swe.grade import grade_patch
from terminus.swe.predictions import PredictionsError, read_predictions, write_predictions
from terminus.swe.validate import validate_instances

from .repos import DATA, git

needs_bwrap = pytest.mark.skipif(bwrap_path() is None, reason="bubblewrap is not installed")
CASES = [
    ("swebench-verified", "verified.jsonl", "ledger"),
    ("swebench-pro", "pro.jsonl", "units"),
    ("swe-rebench-v2", "rebench-v2.jsonl", "slugify"),
]


def _instance(swe_data, bench, file):
    root, _ = swe_data
    return load_instances(bench, dataset=str(root / file))[0]


def _docker(engine: str) -> tuple[SandboxSpec, object]:
    """The host image borrows /usr (images built on it too: bind its binds); the Python with pytest lives in a venv
    over a pyenv build: bind both."""
    from terminus.sandbox.docker import HOST_BINDS

    binds = (*HOST_BINDS, f"{sys.base_prefix}:{sys.base_prefix}:ro", f"{sys.prefix}:{sys.prefix}:ro")
    spec = SandboxSpec("docker", binds=binds, docker_url=engine)
    return spec, grading_limits(PATH=f"{sys.prefix}/bin:/usr/bin:/bin")


def _check_three_patches(inst, partial, spec, limits=None):
    gold = grade_patch(inst, inst.gold_patch, spec, limits=limits)
    assert gold.resolved, (gold.error, gold.statuses, gold.log[-2000:])
    assert gold.report()["fail_to_pass"] == {"passed": 2, "failed": 0}
    empty = grade_patch(inst, "", spec, limits=limits)
    assert not empty.resolved and empty.error is None
    assert empty.report()["fail_to_pass"] == {"passed": 0, "failed": 2}
    assert empty.report()["pass_to_pass"]["failed"] == 0  # the environment works: only the bug fails
    half = grade_patch(inst, partial, spec, limits=limits)
    assert not half.resolved and half.report()["fail_to_pass"] == {"passed": 1, "failed": 1}


@needs_bwrap
@pytest.mark.parametrize(("bench", "file", "repo"), CASES, ids=["python", "go", "javascript"])
def test_grading_in_bwrap(swe_data, bench, file, repo):
    _, built = swe_data
    _check_three_patches(_instance(swe_data, bench, file), built[repo]["partial"], SandboxSpec("bwrap"))


@pytest.mark.docker
@pytest.mark.parametrize(("bench", "file", "repo"), CASES, ids=["python", "go", "javascript"])
def test_grading_in_docker(swe_data, bench, file, repo, docker_engine):
    _, built = swe_data
    inst = _instance(swe_data, bench, file)
    assert inst.image == "terminus-sandbox:host"
    spec, limits = _docker(docker_engine)
    _check_three_patches(inst, built[repo]["partial"], spec, limits)


def test_a_patch_that_does_not_apply(swe_data):
    inst = _instance(swe_data, "swe-rebench-v2", "rebench-v2.jsonl")
    result = grade_patch(
        inst,
        "diff --git a/nope.js b/nope.js\n--- a/nope.js\n+++ b/nope.js\n@@ -1 +1 @@\n-a\n+b\n",
        SandboxSpec("local"),
    )
    assert not result.resolved and not result.patch_applied and result.error == "the patch does not apply"
    assert result.report()["pass_to_pass"] == {"passed": 0, "failed": 2}


def test_edited_tree_is_graded_by_its_diff(swe_data, tmp_path):
    """The main agent's tree: its edits (tracked and new files) against the base commit become the patch."""
    root, _ = swe_data
    inst = _instance(swe_data, "swe-rebench-v2", "rebench-v2.jsonl")
    tree = tmp_path / "tree"
    git("clone", "-q", str(root / "git" / "slugify"), str(tree), cwd=tmp_path)
    git("apply", str(DATA / "repos" / "slugify" / "gold.patch"), cwd=tree)  # the working tree only, as an editor
    (tree / "NOTES.md").write_text("fixed\n")
    patch = patch_from_tree(tree, inst.base_commit)
    assert "b/NOTES.md" in patch and "b/src/slug.js" in patch
    assert grade_patch(inst, patch, SandboxSpec("local")).resolved
    assert "NOTES.md" not in git("status", "--porcelain", "--untracked-files=no", cwd=tree)  # its index untouched


def _grade_command(dataset: Path, predictions: Path, out: Path):
    args = ["--dataset", str(dataset), "--predictions", str(predictions), "--sandbox", "bwrap", "--out", str(out)]
    return CliRunner().invoke(app, ["swe", "grade", *args])


@needs_bwrap
def test_grade_command_writes_the_report(swe_data, tmp_path):
    root, _ = swe_data
    inst = _instance(swe_data, "swebench-verified", "verified.jsonl")
    predictions = write_predictions(
        [{"instance_id": inst.instance_id, "model_name_or_path": "gold", "model_patch": inst.gold_patch}],
        tmp_path / "preds.jsonl",
    )
    out = tmp_path / "report.json"
    result = _grade_command(root / "verified.jsonl", predictions, out)
    assert result.exit_code == 0, result.output
    assert json.loads(out.read_text()) == {
        inst.instance_id: {
            "resolved": True,
            "fail_to_pass": {"passed": 2, "failed": 0},
            "pass_to_pass": {"passed": 3, "failed": 0},
            "patch_applied": True,
            "error": None,
        }
    }
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"instance_id": "nobody__nothing-1", "model_patch": ""}\n')
    result = _grade_command(root / "verified.jsonl", bad, out)
    assert result.exit_code == 2 and "name no instance of the dataset" in result.output


@needs_bwrap
def test_validation_drops_the_planted_broken_row(swe_data):
    root, _ = swe_data
    instances = [
        *load_instances("swebench-verified", dataset=str(root / "verified.jsonl")),
        _instance(swe_data, "swebench-pro", "pro.jsonl"),
        _instance(swe_data, "swe-rebench-v2", "rebench-v2.jsonl"),
    ]
    kept, report = validate_instances(instances, SandboxSpec("bwrap"), concurrency=2)
    assert [i.instance_id for i in kept] == ["acme__ledger-101", instances[2].instance_id, "acme__slugify-lite-7"]
    assert report["dropped"] == 1
    assert (
        "FAIL_TO_PASS passes at base + test patch: tests/test_money.py::test_add"
        in report["reasons"]["acme__ledger-102"]
    )
    seen = report["observed"]["acme__slugify-lite-7"]["before"]["statuses"]
    assert seen["collapses runs of separators"] == "FAILED" and seen["lowercases words"] == "PASSED"


def test_predictions_in_the_official_formats(tmp_path):
    records = [
        {"instance_id": "acme__ledger-101", "model_name_or_path": "terminus", "model_patch": "diff --git a"},
        {"instance_id": "instance_acme__units-1", "model_name_or_path": "terminus", "model_patch": None},
    ]
    swe = write_predictions(records, tmp_path / "p.jsonl", "swebench")
    lines = [json.loads(x) for x in swe.read_text().splitlines()]
    assert lines[0] == {
        "instance_id": "acme__ledger-101",
        "model_name_or_path": "terminus",
        "model_patch": "diff --git a",
    }
    assert all(set(x) == {"instance_id", "model_name_or_path", "model_patch"} for x in lines)
    assert lines[1]["model_patch"] == ""  # never null: the harness would report "patch_is_None"
    pro = write_predictions(records, tmp_path / "p.json", "pro")
    entries = json.loads(pro.read_text())
    assert isinstance(entries, list) and entries[0] == {
        "instance_id": "acme__ledger-101",
        "patch": "diff --git a",
        "prefix": "terminus",
    }
    assert (
        read_predictions(swe)
        == read_predictions(pro)
        == {"acme__ledger-101": "diff --git a", "instance_acme__units-1": ""}
    )
    with pytest.raises(PredictionsError, match="unknown predictions format"):
        write_predictions(records, tmp_path / "x", "sweb")
    (tmp_path / "broken.jsonl").write_text("{not json\n")
    with pytest.raises(PredictionsError, match=r"broken\.jsonl:1 is not valid JSON"):
        read_predictions(tmp_path / "broken.jsonl")


@needs_bwrap
def test_pro_official_scripts_decide_the_statuses(swe_data, tmp_path):
    """With run_scripts_dir, SWE-Bench Pro's run_script.sh runs the selected tests and its parser.py reports them."""
    from terminus.swe.benchmarks import load_benchmark_config

    root, built = swe_data
    cfg = {**load_benchmark_config("swebench-pro"), "run_scripts_dir": str(DATA / "run_scripts")}
    rows = [json.loads(line) for line in (root / "pro.jsonl").read_text().splitlines()]
    for row in rows:  # the official path: the row's own command and parser give way to the scripts
        row.pop("test_cmd"), row.pop("log_parser")
    (root / "pro-official.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (inst,) = load_instances(cfg, dataset=str(root / "pro-official.jsonl"))
    assert inst.log_parser == "pro-json" and inst.run_script and inst.parser_script
    gold = grade_patch(inst, inst.gold_patch, SandboxSpec("bwrap"))
    assert gold.resolved, (gold.error, gold.log[-2000:])
    partial = grade_patch(inst, built["units"]["partial"], SandboxSpec("bwrap"))
    assert partial.report()["fail_to_pass"] == {"passed": 1, "failed": 1}


@needs_bwrap
def test_validate_then_tasks_commands(swe_data, tmp_path):
    root, _ = swe_data
    kept, report = tmp_path / "kept.jsonl", tmp_path / "validation.json"
    result = CliRunner().invoke(
        app,
        [
            "swe",
            "validate",
            "--dataset",
            str(root / "rebench-v2.jsonl"),
            "--benchmark",
            "swe-rebench-v2",
            "--sandbox",
            "bwrap",
            "--out",
            str(kept),
            "--report",
            str(report),
        ],
    )
    assert result.exit_code == 0, result.output
    assert "1 of 1 instances hold" in result.output
    tasks = tmp_path / "corpus" / "tasks.jsonl"
    result = CliRunner().invoke(
        app, ["swe", "tasks", "--instances", str(kept), "--report", str(report), "--out", str(tasks)]
    )
    assert result.exit_code == 0, result.output
    records = [json.loads(line) for line in tasks.read_text().splitlines()]
    assert [r["task_type"] for r in records] == ["error-diagnosis", "test-execution"]
    failing = ["collapses runs of separators", "trims separators at the ends"]
    assert records[1]["facts"]["tests"] == {"passed": 2, "failed": 2, "failing": failing}
    assert (tasks.parent / records[0]["workspace"] / "test" / "slug.test.js").is_file()
    stats = json.loads(tasks.with_suffix(".stats.json").read_text())
    assert stats["by_type"]["test-execution"] == {"ours": 1, "ours_share": 0.5, "paper": 2692, "paper_share": 0.454}


@pytest.mark.docker
def test_image_whose_entrypoint_is_bash(swe_data, docker_engine, tmp_path):
    """SWE-Bench Pro's images run bash as their entrypoint; a sandbox over such an image still starts."""
    import docker

    (tmp_path / "Dockerfile").write_text('FROM terminus-sandbox:host\nENTRYPOINT ["/bin/bash"]\n')
    client = docker.DockerClient(base_url=docker_engine)
    client.images.build(path=str(tmp_path), tag="terminus-swe-entrypoint:test", rm=True)
    client.close()
    inst = _instance(swe_data, "swe-rebench-v2", "rebench-v2.jsonl")
    inst.image = "terminus-swe-entrypoint:test"
    spec, limits = _docker(docker_engine)
    result = grade_patch(inst, inst.gold_patch, spec, limits=limits)
    assert result.resolved, (result.error, result.log[-1000:])


def test_the_agent_does_not_see_the_fix_in_history(swe_data):
    """The main agent's sandbox keeps only what the base commit reaches; grading keeps the fix commit that
    SWE-Bench Pro's test setup checks the tests out of."""
    _, built = swe_data
    inst = _instance(swe_data, "swebench-pro", "pro.jsonl")
    probe = f"git cat-file -e {built['units']['fix']} && echo present || echo absent"
    with instance_sandbox(inst, SandboxSpec("local"), for_agent=True) as (box, workdir):
        assert box.run(f"cd {workdir} && {probe}", 30).output.strip() == "absent"
        assert box.run(f"cd {workdir} && git rev-parse HEAD", 30).output.strip() == inst.base_commit
    with instance_sandbox(inst, SandboxSpec("local")) as (box, workdir):
        assert box.run(f"cd {workdir} && {probe}", 30).output.strip() == "present"
