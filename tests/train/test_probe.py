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


def test_decision_copies_add_cut_copies_of_every_training_conversation(sft_data, tmp_path):
    """`terminus sft-data --decision-copies`: the lever the probe measured. Each training conversation (renamed
    copies included) gains copies cut right after the command that follows the listing; validation is untouched."""
    from typer.testing import CliRunner

    from terminus.cli import app

    tasks, plain = sft_data
    args = ["sft-data", "--trajectories", str(tasks.parent / "traj.jsonl"), "--tasks", str(tasks)]
    result = CliRunner().invoke(app, [*args, "--out", str(tmp_path / "d"), "--augment", "1", "--decision-copies", "2"])
    assert result.exit_code == 0, result.output
    data = load_from_disk(str(tmp_path / "d"))
    counts = json.loads((tmp_path / "d" / "counts.json").read_text())
    full = [r for r in data["train"] if "@decision" not in r["id"]]
    cut = [r for r in data["train"] if "@decision" in r["id"]]
    assert counts["augmented"] == len(full) // 2 and counts["decision_copies"] == len(cut) == 2 * len(full)
    for row in cut:
        messages = [{k: v for k, v in m.items() if v is not None} for m in row["messages"]]
        roles = [m["role"] for m in messages]
        assert roles.count("tool") == 1 and roles[-1] == "assistant" and messages[-1].get("tool_calls")
        source = next(r for r in full if r["id"] == row["id"].split("@")[0])
        assert source["messages"][: len(row["messages"])] == row["messages"]
    assert len(data["validation"]) == len(load_from_disk(str(plain))["validation"])
    assert "decision_copies" not in json.loads((plain / "counts.json").read_text())  # absent unless asked
    bad = CliRunner().invoke(app, [*args, "--out", str(tmp_path / "e"), "--decision-copies", "-1"])
    assert bad.exit_code != 0 and not (tmp_path / "e").exists()


def test_the_copyable_facts_are_those_the_observations_print():
    from terminus.train.probe import copyable_facts

    answer = "2 failed: tests/test_a.py::test_b at src/app.py:41, and test_c; 0 skipped; 7 warnings"
    printed = "FAILED tests/test_a.py::test_b\nsrc/app.py:41: AssertionError\n2 failed, 5 passed"
    facts = [answer[a:b] for a, b in copyable_facts(answer, printed)]
    assert facts == ["2", "tests/test_a.py::test_b", "src/app.py:41"]  # test_c and 7 were never printed; 0 is noise


def test_the_copy_diagnostic_scores_the_same_answer_tokens_with_real_and_swapped_observations(sft_data, tiny_model):
    from terminus.train.probe import _answer_positions, _swapped_positions, copy_diagnostic

    tokenizer = AutoTokenizer.from_pretrained(tiny_model)
    rows = [r for r in load_from_disk(str(sft_data[1]))["train"] if "<final_answer>" in r["messages"][-1]["content"]]
    found = next(f for r in rows if (f := _answer_positions(tokenizer, r["messages"], r["tools"])) is not None)
    row = next(r for r in rows if _answer_positions(tokenizer, r["messages"], r["tools"]) == found)
    ids, positions = found
    spelled = tokenizer.decode([ids[i] for i in positions])
    assert any(ch.isdigit() for ch in spelled)  # fact tokens, from the answer
    other = [dict(m) | ({"content": "nothing here"} if m["role"] == "tool" else {}) for m in row["messages"]]
    swapped_ids, swapped_positions = _swapped_positions(tokenizer, other, row["tools"], found)
    assert [swapped_ids[i] for i in swapped_positions] == [ids[i] for i in positions] and swapped_ids != ids
    model = AutoModelForCausalLM.from_pretrained(tiny_model).eval()
    result = copy_diagnostic(model, tokenizer, rows, limit=4)
    assert result["fact_tokens"] > 0 and 0.0 <= result["fact_token_acc_real"] <= 1.0
    assert result["fact_token_acc_swapped"] is not None
