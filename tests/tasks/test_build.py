"""`terminus tasks build`: deterministic, split by repository, clear errors for bad configs."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from terminus.config import ROOT, ConfigError, load_config
from terminus.runspec import load_run
from terminus.tasks.build import build_corpus
from terminus.tasks.record import load_tasks
from terminus.tasks.splits import assign_splits


def small_config(tmp_path: Path, registry_cache: Path | None = None, **synthetic) -> dict:
    packages = tmp_path / "packages.yaml"
    packages.write_text("- {name: tallyho, version: 1.0.0}\n")
    raw = {
        "run": "t",
        "tasks": {
            "synthetic": {"languages": ["python", "node"], "repos_per_language": 3, **synthetic},
            "registry": {
                "enabled": registry_cache is not None,
                "packages": str(packages),
                "cache": str(registry_cache or tmp_path),
                "mutants_per_package": 2,
            },
        },
    }
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(raw))
    return load_run(path)


def test_build_is_deterministic_and_splits_by_repository(tmp_path, registry_cache):
    config = small_config(tmp_path, registry_cache)
    first = build_corpus(config, tmp_path / "a" / "tasks.jsonl", show_progress=False)
    build_corpus(config, tmp_path / "b" / "tasks.jsonl", show_progress=False)
    assert (tmp_path / "a" / "tasks.jsonl").read_bytes() == (tmp_path / "b" / "tasks.jsonl").read_bytes()
    split_of: dict[str, set] = {}
    for task in first:
        split_of.setdefault(task.repo, set()).add(task.split)
        assert task.query and task.workspace_path(tmp_path / "a" / "tasks.jsonl").is_dir()
    assert all(len(s) == 1 for s in split_of.values()), split_of  # no repository in two splits
    mutants = [t for t in first if t.source == "registry"]
    assert len(mutants) == 4 and len({t.split for t in mutants}) == 1  # a package's mutants stay together
    assert {t.split for t in first} == {"train", "val", "test"}
    stats = json.loads((tmp_path / "a" / "tasks.stats.json").read_text())
    assert stats["tasks"] == len(first) and stats["by_type"]["test-execution"]["paper"] == 2692
    assert load_tasks(tmp_path / "a" / "tasks.jsonl")[0].id == first[0].id


def test_queries_vary():
    from random import Random

    from terminus.tasks.queries import make_query

    queries = {make_query("test-execution", "python", ".", Random(i)) for i in range(60)}
    assert len(queries) > 30  # many phrasings, not one sentence to memorise
    assert any("Do not install" in q for q in queries) and any("`python -m pytest -q`" in q for q in queries)


def test_split_assignment_covers_every_split():
    repos = [f"r{i}" for i in range(10)]
    splits = assign_splits(repos, {"train": 0.6, "val": 0.2, "test": 0.2}, seed=0)
    assert sorted(splits.values()).count("train") == 6 and set(splits.values()) == {"train", "val", "test"}
    assert splits == assign_splits(list(reversed(repos)), {"train": 0.6, "val": 0.2, "test": 0.2}, seed=0)


def test_bad_configs_are_named(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("run: x\ntasks:\n  synthetic:\n    languages: [python, cobol]\n")
    with pytest.raises(ConfigError, match=r"tasks\.synthetic\.languages\.1: 'cobol' is not one of"):
        load_config(bad)
    empty = tmp_path / "empty.yaml"
    empty.write_text("")
    bad.write_text(f"run: x\ntasks:\n  synthetic: {{enabled: false}}\n  registry: {{packages: {empty}}}\n")
    command = [
        sys.executable,
        "-m",
        "terminus.cli",
        "tasks",
        "build",
        "--config",
        str(bad),
        "--out",
        str(tmp_path / "t.jsonl"),
        "--quiet",
    ]
    done = subprocess.run(command, capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 2 and f"{empty} lists no packages" in done.stderr


def test_smoke_config_is_valid():
    config = load_config(ROOT / "configs" / "config.yaml")
    assert config["run"] == "smoke" and config["tasks"]["synthetic"]["repos_per_language"] >= 2


def test_config_hash_does_not_depend_on_the_checkout(tmp_path):
    from terminus.config import config_hash

    text = (ROOT / "configs" / "config.yaml").read_text()
    here = config_hash(load_config(ROOT / "configs" / "config.yaml"))
    (tmp_path / "config.yaml").write_text(text)  # the same file elsewhere: paths resolve elsewhere, same hash
    assert config_hash(load_config(tmp_path / "config.yaml")) == here
    (tmp_path / "config.yaml").write_text(text.replace("seed: 0", "seed: 1"))
    assert config_hash(load_config(tmp_path / "config.yaml")) != here


def test_splits_by_domain_hold_each_code_domain_whole(tmp_path):
    """`tasks.splits.by: domain` (the learning runs): a code domain is in one split in every language, so the
    held-out tasks are code the training never saw; the default stays by repository, its config hash unchanged."""
    run = small_config(tmp_path, languages=["python", "node", "go"], repos_per_language=8)
    raw = yaml.safe_load((tmp_path / "config.yaml").read_text())
    raw["tasks"]["splits"] = {"train": 0.6, "val": 0.2, "test": 0.2, "by": "domain"}
    (tmp_path / "domain.yaml").write_text(yaml.safe_dump(raw | {"run": "d"}))
    by_domain = build_corpus(load_run(tmp_path / "domain.yaml"), tmp_path / "d" / "tasks.jsonl", show_progress=False)
    split_of: dict[str, set] = {}
    for task in by_domain:
        split_of.setdefault(task.meta["domain"], set()).add(task.split)
    assert all(len(s) == 1 for s in split_of.values()), split_of
    assert {s for ss in split_of.values() for s in ss} == {"train", "val", "test"}
    by_repo = build_corpus(run, tmp_path / "r" / "tasks.jsonl", show_progress=False)
    mixed = {}
    for task in by_repo:
        mixed.setdefault(task.meta["domain"], set()).add(task.split)
    assert any(len(s) > 1 for s in mixed.values())  # by repository, a domain is in several splits
    assert "by" not in run.config["tasks"]["splits"]
