"""Paths the user gives resolve against the working folder, never against where the package is installed: a config's
paths, the run folder, training recipes' models, data and output folders, eval subagents' models. And the run spec
that an entry point builds once from a config: its typed sections and its sandbox."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import pytest
import yaml

from builders import TERMINUS
from terminus.config import ROOT, SCHEMA, load_config, resolve, resolve_model, schema_default
from terminus.eval.cells import CellError
from terminus.eval.grid import check_models
from terminus.runspec import SECTIONS, SandboxSpec, load_run


def test_config_paths_are_taken_from_the_working_folder(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert resolve("configs/config.yaml") == tmp_path / "configs" / "config.yaml"
    assert resolve("not/there") == tmp_path / "not" / "there"  # whether or not it exists
    assert resolve("x", base=tmp_path / "b") == tmp_path / "b" / "x"
    assert resolve(ROOT / "x") == ROOT / "x"


def test_a_second_checkout_sharing_the_installed_package_resolves_into_itself(tmp_path, monkeypatch):
    """Two checkouts, one virtual environment (the package installed from the first): the second one's config,
    run folder and SFT output land in the second one (they landed in the first's results/, and SFT resumed from
    its checkpoint)."""
    other = tmp_path / "checkout"
    shutil.copytree(ROOT / "configs", other / "configs")
    monkeypatch.chdir(other)
    run = load_run("configs/config.yaml")
    assert run.config["_path"] == str(other / "configs" / "config.yaml")
    assert run.run_dir == other / "results" / "smoke"
    assert run.judge.rubric == str(other / "configs" / "judge" / "rubric.yaml")
    assert run.judge.serve == str(other / "results" / "smoke" / "models" / "base")
    (other / "results" / "smoke" / "export").mkdir(parents=True)
    assert resolve_model("results/smoke/export") == str(other / "results" / "smoke" / "export")
    # through the command, as the SFT rule runs it from the checkout's folder: the recipe's relative output folder
    done = subprocess.run(
        [TERMINUS, "sft", "--recipe", "configs/sft/tiny.yaml", "--dry_run", "true"],
        cwd=other,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads(done.stdout[done.stdout.index("{") :])
    assert report["output_dir"] == str(other / "results" / "smoke" / "models" / "sft")


def test_a_path_that_exists_becomes_absolute_and_a_hub_id_stays(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "data").mkdir()
    assert resolve_model("data") == str(tmp_path / "data")  # from the working directory
    assert resolve_model("configs/config.yaml") == "configs/config.yaml"  # not here: as given, never the package's
    assert resolve_model("Qwen/Qwen3-4B") == "Qwen/Qwen3-4B"
    assert resolve_model("results/none/export") == "results/none/export"  # not made yet: as given
    assert resolve_model(tmp_path / "missing") == str(tmp_path / "missing")


def test_the_import_stays_light():
    """The agent loop imports ROOT from here: reading a config loads jsonschema (seconds), importing does not."""
    code = "import sys, terminus.config, terminus.runspec; print('jsonschema' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"


def test_eval_subagent_models_become_absolute_folders_or_stay_hub_ids(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "export").mkdir()
    subagents = [
        {"name": "local", "policy": "transformers", "model": "export"},
        {"name": "hub", "policy": "vllm", "model": "Qwen/Qwen3-4B"},
        {"name": "endpoint", "policy": "openai", "model": "results/not-made"},  # not loaded here: untouched
    ]
    check_models({"subagents": subagents})
    assert [s["model"] for s in subagents] == [str(tmp_path / "export"), "Qwen/Qwen3-4B", "results/not-made"]


@pytest.mark.parametrize("model", ["results/not-made/export", "./missing", "/no/such/folder"])
def test_a_missing_local_model_folder_is_named(model):
    with pytest.raises(CellError, match=r"model folder .* does not exist"):
        check_models({"subagents": [{"name": "tiny", "policy": "vllm", "model": model}]})


@pytest.mark.parametrize("name", ["config.yaml", "paper.yaml", "learning.yaml"])
def test_the_run_spec_has_every_section_typed_and_the_configs_sandbox(name):
    """Each typed section holds exactly the schema's keys (a key the schema gains fails here, not silently)."""
    schema = yaml.safe_load(SCHEMA.read_text())
    run = load_run(ROOT / "configs" / name)
    for section, cls in SECTIONS.items():
        assert set(cls.__dataclass_fields__) == set(schema["properties"][section]["properties"]), section
        typed = getattr(run, section)
        assert {k: getattr(typed, k) for k in cls.__dataclass_fields__} == run.config[section]
    assert run.sandbox == SandboxSpec(run.config["sandbox"], run.config["sandbox_image"])
    assert load_run(ROOT / "configs" / name, sandbox="local").sandbox.backend == "local"  # --sandbox wins


def test_each_turn_limit_and_concurrency_default_lives_in_the_schema():
    """The commands' flags read their defaults from the schema; a config fills every eval subagent's turn limit."""
    assert schema_default("collect", "max_turns") == schema_default("eval", "subagents", "tool_call_limit")
    config = load_config(ROOT / "configs" / "config.yaml")
    assert {s["tool_call_limit"] for s in config["eval"]["subagents"]} == {schema_default("collect", "max_turns")}
    from terminus.cli.support import EPISODES_AT_ONCE, TURN_LIMIT

    assert schema_default("collect", "max_turns") == TURN_LIMIT
    assert schema_default("collect", "concurrency") == EPISODES_AT_ONCE


def test_a_task_that_brings_its_own_image_runs_in_it_on_the_backends_that_run_one():
    spec = SandboxSpec("docker", "terminus-sandbox:toolchains")
    assert spec.for_task("swe/image:1").image == "swe/image:1"
    assert spec.for_task(None) == spec
    assert SandboxSpec("bwrap").for_task("swe/image:1") == SandboxSpec("bwrap")
