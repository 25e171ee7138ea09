"""Training: the loss mask TRL trains on covers exactly the assistant turns; real SFT and GRPO steps change the
parameters (TRL's own test pattern); rollouts mask tool output; export round-trips; paper recipes validate."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from transformers import AutoTokenizer

from terminus.config import ROOT
from terminus.train import sft as sft_module

from .helpers import params, run_grpo, run_sft


def test_trl_loss_mask_is_exactly_the_assistant_turns(tiny_model, sft_data):
    from datasets import load_from_disk
    from trl import SFTConfig, SFTTrainer

    tokenizer = AutoTokenizer.from_pretrained(tiny_model)
    data = load_from_disk(str(sft_data[1]))["train"].select(range(3))
    args = SFTConfig(
        output_dir="/tmp/unused",
        assistant_only_loss=True,
        max_length=8192,
        report_to="none",
        use_cpu=True,
        dataset_num_proc=1,
    )
    trainer = SFTTrainer(model=str(tiny_model), args=args, train_dataset=data, processing_class=tokenizer)
    for row, processed in zip(data, trainer.train_dataset, strict=True):
        # the labels TRL computes its loss on: -100 everywhere but the tokens it trains
        trained = tokenizer.decode([t for t in processed["labels"] if t != -100])
        expected = ""
        for message in row["messages"]:
            if message["role"] != "assistant":
                continue
            text = message["content"] or ""
            for call in message["tool_calls"] or []:
                text += ("\n" if text else "") + '<tool_call>\n{"name": "run_in_terminal", "arguments": '
                text += call["function"]["arguments"] + "}\n</tool_call>"
            expected += text + "<|im_end|>"
        assert trained == expected
        for message in row["messages"]:  # no tool output and no prompt is ever trained on
            if message["role"] in ("tool", "user", "system") and len(message["content"]) > 20:
                assert message["content"] not in trained


def test_sft_steps_change_the_parameters_and_log(tiny_model, sft_data, tmp_path):
    before = params(tiny_model)
    summary = run_sft(tiny_model, sft_data[1], tmp_path / "sft", "--max_steps", "2")
    after = params(Path(summary["model"]))
    changed = [k for k in before if not torch.equal(before[k], after[k])]
    assert len(changed) == len(before)  # every parameter moved (full fine-tuning)
    lines = [json.loads(x) for x in (tmp_path / "sft" / "metrics.jsonl").read_text().splitlines()]
    assert any("loss" in row for row in lines)


def test_sft_with_lora_changes_only_the_adapter_and_export_merges_it(tiny_model, sft_data, tmp_path):
    from terminus.train.export import export

    summary = run_sft(
        tiny_model,
        sft_data[1],
        tmp_path / "lora",
        "--max_steps",
        "2",
        "--use_peft",
        "true",
        "--lora_r",
        "8",
        "--lora_target_modules",
        "q_proj",
        "v_proj",
    )
    assert (Path(summary["model"]) / "adapter_config.json").is_file()
    check = export(Path(summary["model"]), tmp_path / "merged", base=str(tiny_model), check_vllm=False)
    merged, base = params(tmp_path / "merged"), params(tiny_model)
    moved = [k for k in base if not torch.equal(base[k], merged[k])]
    assert moved and all(("q_proj" in k or "v_proj" in k) for k in moved)
    assert (tmp_path / "merged" / "README.md").is_file() and check["match"] is None  # --no-vllm: no parity check


@pytest.mark.slow
def test_grpo_steps_change_the_parameters(briefly_sft_model, sft_data, tmp_path):
    """A briefly SFT'd tiny model, so that rollouts differ in reward (all-zero rewards give no gradient)."""
    tasks, _ = sft_data
    before = params(briefly_sft_model)
    result = run_grpo(briefly_sft_model, tasks, tmp_path / "grpo", "--max_steps", "3", "--learning_rate", "1e-3")
    after = params(Path(result["model"]))
    assert any(not torch.equal(before[k], after[k]) for k in before)
    logs = [json.loads(x) for x in (tmp_path / "grpo" / "metrics.jsonl").read_text().splitlines()]
    steps = [row for row in logs if "reward" in row]
    assert len(steps) == 3 and all("episode/turns" in row and "reward_std" in row for row in steps)
    # the 4 rollouts of a step generate together: every batch holds more than one episode's turn
    assert all(1 < row["episode/batch_size"] <= 4 and row["episode/generated_tokens_per_s"] > 0 for row in steps)
    # TRL's truncation count is the rollout's: finished episodes end on their last sampled <|im_end|>
    assert all(row["completions/clipped_ratio"] == row["episode/truncated"] for row in steps)
    assert sum(row["completions/clipped_ratio"] for row in steps) < len(steps)


@pytest.mark.slow
def test_export_loads_in_vllm_with_the_same_greedy_output(tiny_model, tmp_path):
    pytest.importorskip("vllm")
    from terminus.train.export import export

    check = export(tiny_model, tmp_path / "export")
    assert check["match"] is True, check


@pytest.mark.parametrize("stage", ["sft", "grpo"])
def test_paper_recipes_validate_without_downloading(stage):
    module = sft_module if stage == "sft" else pytest.importorskip("terminus.train.grpo")
    info = module.main(*module.parse(["--config", str(ROOT / f"configs/{stage}/qwen3-4b.yaml"), "--dry_run", "true"]))
    if stage == "sft":
        assert info["class"] == "Qwen3ForCausalLM" and info["peft"] and info["max_length"] >= 8192
    else:
        assert info["use_vllm"] and info["num_generations"] == 8
