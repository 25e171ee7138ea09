"""Paths the user gives resolve against the working folder, never against where the package is installed: a config's
paths, the run folder, training recipes' models, data and output folders, eval subagents' models. And the run spec
that an entry point builds once from a config: its typed sections and its sandbox."""

from __future__ import annotations

import copy
import json
import shutil
import subprocess
import sys

import pytest
import yaml

from builders import TERMINUS
from terminus.config import ROOT, SCHEMA, ConfigError, load_config, resolve, resolve_model
from terminus.eval.cells import CellError
from terminus.eval.grid import check_models
from terminus.runspec import load_run
from terminus.sandbox.spec import SandboxSpec
from terminus.settings import TURN_LIMIT, Collect, Config, Subagent, SweTasks, field_default, filled


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
    """The agent loop imports ROOT from here: jsonschema (seconds to import) is not loaded; pydantic (the typed
    config, a tenth of a second) is."""
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
    section = Config.model_validate({"run": "x", "tasks": {}, "eval": {"subagents": subagents}}).eval
    checked = check_models(section)
    assert [s.model for s in checked.subagents] == [str(tmp_path / "export"), "Qwen/Qwen3-4B", "results/not-made"]
    assert [s.model for s in section.subagents] == [s["model"] for s in subagents]  # the loaded one is unchanged


@pytest.mark.parametrize("model", ["results/not-made/export", "./missing", "/no/such/folder"])
def test_a_missing_local_model_folder_is_named(model):
    sub = {"name": "tiny", "policy": "vllm", "model": model}
    with pytest.raises(CellError, match=r"model folder .* does not exist"):
        check_models(Config.model_validate({"run": "x", "tasks": {}, "eval": {"subagents": [sub]}}).eval)


@pytest.mark.parametrize("name", ["config.yaml", "paper.yaml", "learning.yaml"])
def test_the_run_spec_has_every_section_typed_and_the_configs_sandbox(name):
    """The typed config is the filled dict, section by section, frozen; a key the models gain is in both."""
    run = load_run(ROOT / "configs" / name)
    public = {k: v for k, v in run.config.items() if not k.startswith("_")}
    assert filled(run.cfg) == public
    assert set(public) == set(Config.model_fields)
    for section in ("tasks", "collect", "model", "judge", "eval"):
        assert getattr(run, section) is getattr(run.cfg, section)
    with pytest.raises(ValueError):  # pydantic's frozen-instance error
        run.cfg.collect.max_turns = 3
    assert run.sandbox == SandboxSpec(run.config["sandbox"], run.config["sandbox_image"])
    assert load_run(ROOT / "configs" / name, sandbox="local").sandbox.backend == "local"  # --sandbox wins


def test_each_turn_limit_and_concurrency_default_lives_in_the_typed_config():
    """The commands' flags read their defaults from the models; a config fills every eval subagent's turn limit."""
    assert field_default(Collect, "max_turns") == field_default(Subagent, "tool_call_limit") == TURN_LIMIT
    config = load_config(ROOT / "configs" / "config.yaml")
    assert {s["tool_call_limit"] for s in config["eval"]["subagents"]} == {TURN_LIMIT}
    from terminus.cli.support import EPISODES_AT_ONCE
    from terminus.cli.support import TURN_LIMIT as FLAG_TURNS
    from terminus.cli.swe import INSTANCES_AT_ONCE

    assert FLAG_TURNS == TURN_LIMIT
    assert field_default(Collect, "concurrency") == EPISODES_AT_ONCE
    assert field_default(SweTasks, "concurrency") == INSTANCES_AT_ONCE


def test_the_committed_schema_is_what_the_models_generate():
    """configs/schema/config.schema.json is generated (`terminus config schema --out configs/schema/...`): a model
    changed without regenerating it fails here."""
    from terminus.cli.configs import schema_text

    assert SCHEMA.read_text() == schema_text()
    schema = json.loads(SCHEMA.read_text())
    assert schema["required"] == ["run", "tasks"] and schema["additionalProperties"] is False


def test_set_goes_in_before_validation_and_an_unknown_key_is_named():
    config = load_config(ROOT / "configs" / "config.yaml", ["eval.concurrency=8", "judge.endpoint.model=m"])
    assert config["eval"]["concurrency"] == 8
    assert config["judge"]["endpoint"] == {"model": "m", "api": "chat", "reasoning": False}
    assert config["_hash"] != load_config(ROOT / "configs" / "config.yaml")["_hash"]  # another config
    with pytest.raises(ConfigError, match=r"collect\.max_turn: unknown key"):
        load_config(ROOT / "configs" / "config.yaml", ["collect.max_turn=3"])
    with pytest.raises(ConfigError, match=r"--set 'x': give KEY=VALUE"):
        load_config(ROOT / "configs" / "config.yaml", ["x"])
    with pytest.raises(ConfigError, match=r"eval\.seeds has 0 twice; each must be unique"):
        load_config(ROOT / "configs" / "config.yaml", ["eval.seeds=[0, 0]"])


def test_a_flag_over_a_setting_derives_a_new_spec_and_keeps_the_stamp():
    from terminus.cli.support import override_endpoint_limits

    run = load_run(ROOT / "configs" / "config.yaml")
    before = copy.deepcopy(run.config)
    changed = override_endpoint_limits(run, "eval", 7, None)
    assert run.config == before and run.cfg.eval.request_timeout == 120  # the loaded one is unchanged
    assert changed.cfg.eval.request_timeout == 7 and changed.config["_hash"] == run.config["_hash"]
    assert {s.request_timeout for s in changed.cfg.eval.subagents} == {7}
    assert {s.max_retries for s in changed.cfg.eval.main_agents} == {run.cfg.eval.max_retries}


def test_config_show_prints_the_resolved_config(tmp_path, monkeypatch):
    from typer.testing import CliRunner

    from terminus.cli import app

    monkeypatch.chdir(ROOT)
    done = CliRunner().invoke(app, ["config", "show", "--set", "collect.max_turns=12", "-c", "seed=3"])
    assert done.exit_code == 0, done.output
    shown = yaml.safe_load(done.stdout)
    assert list(shown)[:4] == ["run", "seed", "sandbox", "sandbox_image"] and not any(k[0] == "_" for k in shown)
    assert shown["collect"]["max_turns"] == 12 and shown["seed"] == 3
    bad = CliRunner().invoke(app, ["config", "show", "--set", "eval.nosuch=1"])
    assert bad.exit_code == 2 and "eval.nosuch: unknown key" in bad.output


def test_a_task_that_brings_its_own_image_runs_in_it_on_the_backends_that_run_one():
    spec = SandboxSpec("docker", "terminus-sandbox:toolchains")
    assert spec.for_task("swe/image:1").image == "swe/image:1"
    assert spec.for_task(None) == spec
    assert SandboxSpec("bwrap").for_task("swe/image:1") == SandboxSpec("bwrap")


@pytest.mark.parametrize("name", ["config.yaml", "paper.yaml", "learning.yaml"])
def test_each_grpo_recipe_rolls_out_at_most_the_configs_turn_limit(name):
    """The turn limit's one home is the experiment config; GRPO refuses a recipe that asks for more (naming both)."""
    from terminus.config import load_yaml
    from terminus.train.grpo import check_turn_limit

    run = load_run(ROOT / "configs" / name)
    recipe = load_yaml(ROOT / run.cfg.model.grpo_recipe)
    check_turn_limit(recipe["max_turns"], run)
    with pytest.raises(ConfigError, match=r"max_turns 11 is above the experiment config's collect\.max_turns 10"):
        check_turn_limit(run.cfg.collect.max_turns + 1, run)
