"""Adapters: each family's rows, in its published schema, become repair instances and corpus tasks with the right
facts; benchmark configs load and name the fields the adapters read; the SWE-rebench-V2 selection."""

from __future__ import annotations

import json

import pytest

from terminus.judge.facts import required_facts
from terminus.swe.benchmarks import BENCHMARKS, benchmark_repos, dockerfile, load_benchmark_config, load_instances
from terminus.swe.corpus import added_dependency, label_distribution, select_rebench, tasks_for
from terminus.swe.families import DatasetError, decode_tests, load_rows
from terminus.swe.record import RepairInstance
from terminus.tasks.record import load_tasks, write_tasks

from .repos import LEDGER_F2P, LEDGER_P2P


def test_published_encodings_are_kept(swe_data):
    root, _ = swe_data
    verified = load_rows(str(root / "verified.jsonl"))[0]
    pro = load_rows(str(root / "pro.jsonl"))[0]
    rebench = load_rows(str(root / "rebench-v2.jsonl"))[0]
    sharp = load_rows(str(root / "sharp.csv"))[0]
    assert isinstance(verified["FAIL_TO_PASS"], str) and json.loads(verified["FAIL_TO_PASS"]) == LEDGER_F2P
    assert pro["fail_to_pass"].startswith("['") and "fail_to_pass" in pro and "FAIL_TO_PASS" not in pro
    assert isinstance(rebench["FAIL_TO_PASS"], list) and isinstance(rebench["install_config"], dict)
    assert sharp["version"] == "1.4" and sharp["FAIL_TO_PASS"].startswith('["')  # CSV: strings stay strings
    with pytest.raises(DatasetError, match="field FAIL_TO_PASS is not a list"):
        decode_tests("not a list", "FAIL_TO_PASS", "x")


def test_each_family_maps_to_a_repair_instance(swe_data):
    root, built = swe_data
    ledger, broken = load_instances("swebench-verified", dataset=str(root / "verified.jsonl"))
    assert ledger.family == "swebench" and ledger.language == "python" and ledger.repo == "acme/ledger"
    assert ledger.fail_to_pass == LEDGER_F2P and ledger.pass_to_pass == LEDGER_P2P
    assert ledger.base_commit == built["ledger"]["base"] and ledger.gold_patch == built["ledger"]["gold"]
    assert ledger.test_cmd.endswith("tests/test_money.py")  # {test_files}: the files the test patch touches
    assert ledger.repo_path == str(root / "git" / "ledger") and ledger.workdir is None
    assert "tests/test_money.py::test_add" in broken.fail_to_pass
    (units,) = load_instances("swebench-pro", dataset=str(root / "pro.jsonl"))
    assert units.family == "pro" and units.language == "go" and units.log_parser == "gotest"
    assert units.fail_to_pass == ["TestParseSizeMegabytes", "TestParseSizeLowercase"]
    assert units.test_setup == [f"git checkout {built['units']['fix']} -- size_test.go"]  # last line only
    assert "TestParseSizeLowercase|TestParseSizeBytes" in units.test_cmd
    (slug,) = load_instances("swe-rebench-v2", dataset=str(root / "rebench-v2.jsonl"))
    assert slug.family == "rebench-v2" and slug.test_cmd == "node --test test/slug.test.js"
    assert slug.log_parser == "node" and slug.image == "terminus-sandbox:host"
    (sharp,) = load_instances("swe-sharp", dataset=str(root / "sharp.csv"))
    assert sharp.language == "csharp" and sharp.log_parser == "trx" and sharp.workdir == "/testbed"
    assert sharp.image == "swe-sharp/acme__stringkit-12:latest" and "dotnet test --logger" in sharp.test_cmd
    assert "FROM mcr.microsoft.com/dotnet/sdk:8.0" in dockerfile(sharp, load_benchmark_config("swe-sharp"))
    assert RepairInstance.from_dict(json.loads(json.dumps(sharp.to_dict()))) == sharp


def test_hub_rows_get_the_configured_environment():
    """A Verified row as the hub has it (no repo_path, no test_cmd): image, workdir, command from the config."""
    row = {
        "repo": "django/django",
        "instance_id": "django__django-11099",
        "base_commit": "abc",
        "patch": "",
        "test_patch": "diff --git a/tests/auth_tests/test_validators.py b/tests/auth_tests/test_validators.py\n",
        "problem_statement": "p",
        "FAIL_TO_PASS": "[]",
        "PASS_TO_PASS": "[]",
        "version": "3.0",
    }
    from terminus.swe.benchmarks import instances_from_rows

    (inst,) = instances_from_rows([row], load_benchmark_config("swebench-verified"))
    assert inst.image == "swebench/sweb.eval.x86_64.django_1776_django-11099:latest" and inst.workdir == "/testbed"
    assert inst.test_cmd.endswith("--parallel 1 auth_tests.test_validators") and inst.log_parser == "django"
    assert inst.pre_test == ["source /opt/miniconda3/bin/activate", "conda activate testbed"]
    with pytest.raises(DatasetError, match="no test command or log parser"):
        instances_from_rows(
            [{**row, "repo_language": "js", "fail_to_pass": "[]", "dockerhub_tag": "t"}],
            load_benchmark_config("swebench-pro"),
        )


def test_configs_name_the_fields_the_rows_have(swe_data):
    root, _ = swe_data
    files = {
        "swebench-verified": "verified.jsonl",
        "swebench-pro": "pro.jsonl",
        "swe-sharp": "sharp.csv",
        "swe-rebench-v2": "rebench-v2.jsonl",
    }
    for name in (*BENCHMARKS, "swe-rebench-v2"):
        cfg = load_benchmark_config(name)
        row = load_rows(str(root / files[name]))[0]
        for column in cfg["fields"].values():
            head, _, sub = column.partition(".")
            assert head in row, f"{name}: {head} is not a column"
            assert not sub or sub in row[head], f"{name}: {column}"
    assert "gravitational/teleport" in benchmark_repos(["swebench-pro"])
    with pytest.raises(DatasetError, match="does not exist"):
        load_benchmark_config("swe-nothing")


def test_tasks_carry_the_dataset_expectations(swe_data, tmp_path):
    root, _ = swe_data
    (units,) = load_instances("swebench-pro", dataset=str(root / "pro.jsonl"))
    tasks_file = tmp_path / "tasks.jsonl"
    tasks = tasks_for(units, tasks_file)
    assert [t.task_type for t in tasks] == ["test-execution", "error-diagnosis"]
    facts = tasks[0].facts["tests"]
    assert facts == {"passed": 2, "failed": 2, "failing": ["TestParseSizeMegabytes", "TestParseSizeLowercase"]}
    assert ("test", "TestParseSizeMegabytes") in required_facts("test-execution", tasks[0].facts)
    snapshot = tasks[0].workspace_path(tasks_file)
    assert "TestParseSizeLowercase" in (snapshot / "size_test.go").read_text()  # base + the tests in place
    assert "1000 * 1000" not in (snapshot / "size.go").read_text()  # the bug is still there
    # With a validation run's observation: facts from the statuses seen, and a build task for Go.
    observed = {
        "before": {
            "statuses": {
                "TestParseSizeBytes": "PASSED",
                "TestParseSizeKilobytes": "PASSED",
                "TestParseSizeMegabytes": "FAILED",
                "TestParseSizeLowercase": "FAILED",
            }
        }
    }
    tasks = tasks_for(units, tasks_file, observed)
    assert tasks[-1].task_type == "build/compile" and tasks[-1].facts == {"build": {"success": True, "warnings": 0}}
    write_tasks(tasks_file, tasks)
    assert len(load_tasks(tasks_file)) == 3
    stats = label_distribution(tasks)
    assert stats["by_type"]["build/compile"]["ours"] == 1 and stats["by_type"]["test-execution"]["paper"] == 2692


def test_dependency_tasks_come_from_manifest_additions():
    patch = (
        "diff --git a/requirements.txt b/requirements.txt\n--- a/requirements.txt\n+++ b/requirements.txt\n"
        "@@ -1 +1,2 @@\n requests==2.31.0\n+python-dateutil>=2.8\n"
    )
    assert added_dependency(patch) == {
        "package": "python-dateutil",
        "fix": "pip install python-dateutil",
        "manifest": "requirements.txt",
    }
    npm = (
        "diff --git a/package.json b/package.json\n--- a/package.json\n+++ b/package.json\n@@ -3,3 +3,4 @@\n"
        '   "dependencies": {\n+    "left-pad": "^1.3.0",\n     "chalk": "^5.0.0"\n'
    )
    assert added_dependency(npm)["fix"] == "npm install left-pad"
    assert added_dependency("diff --git a/src/a.py b/src/a.py\n+import os\n") is None


def test_rebench_selection_by_repository():
    rows = [
        {"instance_id": f"{r}-{i}", "repo": r, "language": lang}
        for r, lang in [
            ("a/x", "python"),
            ("b/y", "go"),
            ("c/z", "java"),
            ("ansible/ansible", "python"),
            ("d/w", "rust"),
            ("e/v", "javascript"),
        ]
        for i in range(5)
    ]
    cfg = {**load_benchmark_config("swe-rebench-v2"), "max_per_repo": 3, "max_instances": 9}
    chosen, splits = select_rebench(rows, cfg, benchmark_repos(["swebench-pro"]))
    repos = {r["repo"] for r in chosen}
    assert len(chosen) == 9 and len(repos) == 3 and "c/z" not in repos and "ansible/ansible" not in repos
    assert set(splits) == repos and set(splits.values()) == {"train", "val", "test"}
    assert select_rebench(rows, cfg, set()) == select_rebench(list(reversed(rows)), cfg, set())  # deterministic


def test_select_command_keeps_eval_repositories_out(tmp_path):
    from typer.testing import CliRunner

    from terminus.cli import app

    rows = [
        {
            "instance_id": f"{repo}-{i}",
            "repo": repo,
            "language": lang,
            "FAIL_TO_PASS": ["t"],
            "PASS_TO_PASS": [],
            "created_at": "2024-01-01T00:00:00Z",
        }
        for repo, lang in [
            ("a/x", "python"),
            ("b/y", "go"),
            ("django/django", "python"),
            ("flipt-io/flipt", "go"),
            ("c/z", "php"),
            ("d/w", "rust"),
        ]
        for i in range(3)
    ]
    source = tmp_path / "rows.jsonl"
    source.write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = tmp_path / "selected.jsonl"
    result = CliRunner().invoke(app, ["swe", "select", "--dataset", str(source), "--out", str(out)])
    assert result.exit_code == 0, result.output
    chosen = [json.loads(line) for line in out.read_text().splitlines()]
    assert {r["repo"] for r in chosen} == {"a/x", "b/y", "d/w"} and len(chosen) == 9
    splits = json.loads(out.with_suffix(".splits.json").read_text())
    assert set(splits) == {"a/x", "b/y", "d/w"} and set(splits.values()) == {"train", "val", "test"}


def test_a_hub_id_finds_its_benchmark_config():
    from terminus.swe.benchmarks import config_for_dataset

    assert config_for_dataset("ScaleAI/SWE-bench_Pro")["name"] == "swebench-pro"
    assert config_for_dataset("princeton-nlp/SWE-bench_Verified")["workdir"] == "/testbed"
    assert config_for_dataset("someone/else") is None
