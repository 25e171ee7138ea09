"""The learning probe (terminus.train.probe): which command a model runs after the listing, and what the listing
is worth to it."""

from __future__ import annotations

import json
import math

from datasets import load_from_disk
from transformers import AutoModelForCausalLM, AutoTokenizer

from terminus.train.probe import cases, command_tokens, probe_split, program, root


def test_program_and_root_of_a_command():
    assert program("cd backend/pexi && cmake -S . -B build >/dev/null") == "cmake"
    assert root("cd backend/pexi/ && cmake -S . -B build") == "backend/pexi"
    assert program("go build ./... 2>&1") == "go" and root("go build ./... 2>&1") == "."
    assert program("") == "" and root("") == "."


def test_each_case_swaps_in_the_listing_of_a_project_with_another_program(sft_data):
    rows = list(load_from_disk(str(sft_data[1]))["train"])
    found = cases(rows, limit=0)
    assert len(found) >= 4
    listing_program = {c["messages"][c["at"]]["content"]: program(c["command"]) for c in found}
    assert len(set(listing_program.values())) >= 2  # python3 and go
    for case in found:
        assert case["swapped_listing"] is not None
        assert listing_program[case["swapped_listing"]] != program(case["command"])
    assert len(cases(rows, limit=3)) == 3


def test_the_loss_is_taken_on_the_tokens_of_the_command(sft_data, tiny_model):
    tokenizer = AutoTokenizer.from_pretrained(tiny_model)
    rows = list(load_from_disk(str(sft_data[1]))["train"])
    case = cases(rows, limit=1)[0]
    ids, positions = command_tokens(tokenizer, case["messages"], case["at"], case["command"], case["tools"])
    assert positions == list(range(positions[0], positions[-1] + 1))  # one contiguous span
    spelled = tokenizer.decode([ids[i] for i in positions])
    quoted = json.dumps(case["command"])[1:-1]
    assert quoted.startswith(spelled[: len(quoted) - 2]) and len(spelled) <= len(quoted) + 2


def test_probe_figures_of_an_untrained_model(sft_data, tiny_model):
    tokenizer = AutoTokenizer.from_pretrained(tiny_model)
    model = AutoModelForCausalLM.from_pretrained(tiny_model).eval()
    rows = list(load_from_disk(str(sft_data[1]))["train"])
    result = probe_split(model, tokenizer, rows, limit=3, max_new_tokens=8)
    assert result["n"] == 3
    for key in ("program_accuracy", "root_accuracy", "exact_command"):
        assert 0.0 <= result[key] <= 1.0
    assert result["exact_command"] == 0.0  # an untrained model does not spell a command in 8 tokens
    assert result["nll_true"] > 1.0 and result["nll_swapped"] > 1.0  # it has not learned the commands either
    assert math.isclose(result["observation_gain"], result["nll_swapped"] - result["nll_true"], abs_tol=2e-4)


def test_the_benchmark_names_a_missing_model_folder(tmp_path, sft_data):
    import subprocess
    import sys

    from terminus.config import ROOT

    script = ROOT / "benchmarks" / "learning_probe.py"
    argv = ["--data", str(sft_data[1]), "--model", f"sft={tmp_path / 'nowhere'}", "--name", "probe_test_unwritten"]
    run = subprocess.run(
        [sys.executable, str(script), *argv],
        capture_output=True,
        text=True,
    )
    assert run.returncode != 0
    assert "--model sft=" in run.stderr and "no model folder" in run.stderr
    assert not (ROOT / "results" / "benchmarks" / "probe_test_unwritten.json").exists()
