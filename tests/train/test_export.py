"""Export's parity check compares like with like: vLLM loading the exported folder and the trained model in memory
score one fixed episode, both in float32 on the same device class. A correct export passes through the CLI; a
corrupted weight in the folder fails it."""

from __future__ import annotations

import json
import subprocess

import pytest

from builders import TERMINUS, cli_args


@pytest.mark.slow
def test_a_correct_export_meets_the_parity_check_through_the_cli(tiny_model, tmp_path):
    pytest.importorskip("vllm")
    out = tmp_path / "export"
    done = subprocess.run(
        [TERMINUS, *cli_args("export", model=tiny_model, out=out)], capture_output=True, text=True, timeout=900
    )
    assert done.returncode == 0, done.stderr[-3000:]
    check = json.loads((out / "export_check.json").read_text())
    assert check["match"] is True and check["dtype"] == "float32" and check["device"] == "cpu"
    assert check["max_abs_logprob_diff"] <= 0.001 < check["tolerance"] and check["tokens"] > 50


@pytest.mark.slow
def test_a_corrupted_weight_fails_the_parity_check(tiny_model, tmp_path):
    pytest.importorskip("vllm")
    from safetensors.torch import load_file, save_file
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from terminus.train.export import export, parity

    out = tmp_path / "export"
    export(tiny_model, out, check_vllm=False)
    weights = load_file(out / "model.safetensors")
    name = next(k for k in sorted(weights) if "mlp.down_proj" in k)
    weights[name] = weights[name] * 1.5  # one matrix of one layer, as a bad merge or a truncated write would leave it
    save_file(weights, out / "model.safetensors", metadata={"format": "pt"})
    trained = AutoModelForCausalLM.from_pretrained(tiny_model)
    check = parity(trained, AutoTokenizer.from_pretrained(tiny_model), out)
    assert check["match"] is False and check["max_abs_logprob_diff"] > check["tolerance"], check
