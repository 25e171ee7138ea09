"""One resolver for relative paths (the working folder first, then the repository's shipped configs): config
paths, run folders and recipes' outputs, and paths that may also be hub ids (training recipes' models and data,
eval subagents' models)."""

from __future__ import annotations

import sys

import pytest

from terminus.config import ROOT, resolve, resolve_model
from terminus.eval.cells import CellError
from terminus.eval.grid import check_models


def test_config_paths_come_from_the_working_folder_then_the_repository_root(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert resolve("configs/config.yaml") == ROOT / "configs" / "config.yaml"  # shipped: found from any folder
    assert resolve("not/there") == tmp_path / "not" / "there"  # made nowhere yet: an output, here
    assert resolve(tmp_path / "x") == tmp_path / "x"
    (tmp_path / "configs").mkdir()
    (tmp_path / "configs" / "config.yaml").write_text("run: mine\n")
    assert resolve("configs/config.yaml") == tmp_path / "configs" / "config.yaml"  # this checkout's own


def test_a_second_checkout_writes_its_runs_and_models_into_itself(tmp_path, monkeypatch):
    """Two checkouts sharing one virtual environment: the package is the first's, the work is the second's."""
    from terminus.config import run_dir
    from terminus.train.sft import parse

    monkeypatch.chdir(tmp_path)
    assert run_dir({"run": "smoke"}) == tmp_path / "results" / "smoke"
    recipe = ROOT / "configs" / "sft" / "tiny.yaml"
    _, training_args, _ = parse(["--config", str(recipe), "--output_dir", "results/smoke/models/sft"])
    assert training_args.output_dir == str(tmp_path / "results" / "smoke" / "models" / "sft")


def test_a_path_that_exists_becomes_absolute_and_a_hub_id_stays(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "data").mkdir()
    assert resolve_model("data") == str(tmp_path / "data")  # from the working directory
    assert resolve_model("configs/config.yaml") == str(ROOT / "configs" / "config.yaml")  # else from the root
    assert resolve_model("Qwen/Qwen3-4B") == "Qwen/Qwen3-4B"
    assert resolve_model("results/none/export") == "results/none/export"  # not made yet: as given
    assert resolve_model(tmp_path / "missing") == str(tmp_path / "missing")


def test_the_working_directory_wins_over_the_root(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "configs").mkdir()
    assert resolve_model("configs") == str(tmp_path / "configs")


def test_the_import_stays_light():
    """The agent loop imports ROOT from here: reading a config loads jsonschema (seconds), importing does not."""
    import subprocess

    code = "import sys, terminus.config; print('jsonschema' in sys.modules)"
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
