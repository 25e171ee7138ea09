"""SFT conversations fit the recipe's max_length with their end whole (`train.fit`): TRL would cut the end, the
final answer; here the tool outputs in the middle are shortened instead, or the conversation is dropped, counted."""

from __future__ import annotations

import json

import pytest
import yaml
from datasets import load_from_disk
from transformers import AutoTokenizer
from typer.testing import CliRunner

from terminus.agent.template import install
from terminus.agent.terminal import TERMINAL_TOOL
from terminus.cli import app
from terminus.config import ROOT
from terminus.train import TrainingInputError
from terminus.train.fit import FLOOR_CHARS, LengthReport, elided, fit, recipe_length, sft_tokens

ANSWER = "<final_answer>\nCommand: pytest -q\nSummary: 3 passed, 1 failed (test_parse: KeyError 'x').\n</final_answer>"


def _call(command: str) -> dict:
    arguments = json.dumps({"command": command, "timeout_ms": 60000})
    return {"type": "function", "function": {"name": "run_in_terminal", "arguments": arguments}}


def _row(outputs: list[str]) -> dict:
    messages = [
        {"role": "system", "content": "You run commands.", "tool_calls": None, "name": None},
        {"role": "user", "content": "Run the tests.", "tool_calls": None, "name": None},
    ]
    for k, output in enumerate(outputs):
        messages.append({"role": "assistant", "content": "", "tool_calls": [_call(f"step {k}")], "name": None})
        messages.append({"role": "tool", "content": output, "tool_calls": None, "name": "run_in_terminal"})
    messages.append({"role": "assistant", "content": ANSWER, "tool_calls": None, "name": None})
    return {"id": "r1", "messages": messages, "tools": [TERMINAL_TOOL]}


def _log(lines: int, tag: str) -> str:
    return "\n".join(f"{tag} line {i}: collected item {i * 7} ok" for i in range(lines)) + "\n[exit code 1]"


@pytest.fixture(scope="module")
def tokenizer(tiny_model):
    return install(AutoTokenizer.from_pretrained(str(tiny_model)))


def _trained(tokenizer, row: dict) -> list[list[int]]:
    """Each assistant turn's trained token ids (a run of assistant-mask 1s), in order."""
    out = sft_tokens(tokenizer, row)
    spans, current = [], []
    for token, mask in zip(out["input_ids"], out["assistant_masks"], strict=True):
        if mask:
            current.append(token)
        elif current:
            spans, current = [*spans, current], []
    return spans + ([current] if current else [])


def test_elided_keeps_head_and_tail_lines_around_the_terminals_marker():
    text = _log(200, "a")
    short = elided(text, 600)
    lines = short.split("\n")
    assert len(short) < 700 and lines[0] == text.split("\n")[0] and lines[-1] == "[exit code 1]"
    assert any(line.startswith("[... ") and line.endswith(" lines of output elided ...]") for line in lines)
    one_line = "x" * 5000
    assert len(elided(one_line, 600)) < 700 and "characters of output elided" in elided(one_line, 600)
    assert elided("short", 600) == "short"


def test_a_conversation_over_the_limit_keeps_its_final_answer_token_for_token(tokenizer):
    row = _row([_log(10, "listing"), _log(400, "build"), _log(300, "test")])
    before = sft_tokens(tokenizer, row)["input_ids"]
    limit = len(before) * 2 // 3
    report = LengthReport(limit)
    fitted = fit(tokenizer, row, limit, report)
    after = sft_tokens(tokenizer, fitted)["input_ids"]
    assert len(after) <= limit < len(before)
    # every assistant turn, the final answer above all, is trained on the same tokens as before
    assert _trained(tokenizer, fitted) == _trained(tokenizer, row)
    assert tokenizer.decode(_trained(tokenizer, fitted)[-1]).startswith(ANSWER)
    assert [m["content"] for m in fitted["messages"] if m["role"] != "tool"] == [
        m["content"] for m in row["messages"] if m["role"] != "tool"
    ]
    tools = [m["content"] for m in fitted["messages"] if m["role"] == "tool"]
    assert tools[0] == row["messages"][3]["content"]  # the short listing is left alone
    assert all(t.endswith("[exit code 1]") for t in tools) and "lines of output elided" in tools[1]  # the longest
    assert report.to_dict() == {"max_length": limit, "over": 1, "shortened": 1, "dropped": 0, "longest": len(before)}
    assert fit(tokenizer, fitted, limit, report) is fitted and report.over == 1  # what fits is left as it is


def test_a_conversation_that_cannot_fit_is_dropped_and_counted(tokenizer):
    row = _row([_log(400, "build")])
    floor = _row([elided(_log(400, "build"), FLOOR_CHARS)])
    report = LengthReport(len(sft_tokens(tokenizer, floor)["input_ids"]) - 40)
    assert fit(tokenizer, row, report.max_length, report) is None
    assert (report.over, report.shortened, report.dropped, report.dropped_ids) == (1, 0, 1, ["r1"])


def test_the_recipe_is_the_one_home_of_max_length(tiny_model, tmp_path):
    tok, limit = recipe_length(ROOT / "configs" / "sft" / "tiny.yaml", str(tiny_model))
    assert limit == yaml.safe_load((ROOT / "configs" / "sft" / "tiny.yaml").read_text())["max_length"]
    assert tok.chat_template == install(AutoTokenizer.from_pretrained(str(tiny_model))).chat_template
    assert yaml.safe_load((ROOT / "configs" / "sft" / "qwen3-4b.yaml").read_text())["max_length"] == 32768
    bad = tmp_path / "bad.yaml"
    bad.write_text(f"model_name_or_path: {tiny_model}\n")
    with pytest.raises(TrainingInputError, match="no max_length"):
        recipe_length(bad)


def test_sft_data_fits_every_conversation_to_the_recipe(sft_data, tiny_model, tokenizer, tmp_path):
    """`terminus sft-data --recipe` as the workflow runs it: counts.json says how many were over the limit, and the
    conversations that were keep their final answers."""
    tasks, plain = sft_data
    whole = {row["id"]: row for row in load_from_disk(str(plain))["train"]}
    lengths = {i: len(sft_tokens(tokenizer, row)["input_ids"]) for i, row in whole.items()}
    limit = sorted(lengths.values())[len(lengths) // 2]  # half of them are over it
    recipe = tmp_path / "recipe.yaml"
    recipe.write_text(yaml.safe_dump({"model_name_or_path": str(tiny_model), "max_length": limit}))
    out = tmp_path / "sft"
    args = ["sft-data", "--trajectories", str(tasks.parent / "traj.jsonl"), "--tasks", str(tasks)]
    result = CliRunner().invoke(app, [*args, "--out", str(out), "--recipe", str(recipe)])
    assert result.exit_code == 0, result.output
    counts = json.loads((out / "counts.json").read_text())
    over = sum(n > limit for n in lengths.values())
    assert counts["length"]["max_length"] == limit and counts["length"]["over"] >= over > 0
    assert counts["length"]["shortened"] + counts["length"]["dropped"] == counts["length"]["over"]
    for row in load_from_disk(str(out))["train"]:
        assert len(sft_tokens(tokenizer, row)["input_ids"]) <= limit
        assert _trained(tokenizer, row) == _trained(tokenizer, whole[row["id"]])
