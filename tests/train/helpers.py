"""SFT and GRPO runs through the recipes' own parsers, as `terminus sft` / `terminus grpo` run them."""

from __future__ import annotations

from pathlib import Path

import torch

from terminus.config import ROOT
from terminus.train import grpo as grpo_module
from terminus.train import sft as sft_module


def params(path: Path) -> dict[str, torch.Tensor]:
    from transformers import AutoModelForCausalLM

    return {k: v.detach().clone() for k, v in AutoModelForCausalLM.from_pretrained(path).state_dict().items()}


def run_sft(model: Path, data: Path, out: Path, *extra: str) -> dict:
    argv = [
        "--config",
        str(ROOT / "configs/sft/tiny.yaml"),
        "--model_name_or_path",
        str(model),
        "--dataset_path",
        str(data),
        "--output_dir",
        str(out),
        "--report_to",
        "none",
        "--eval_strategy",
        "no",
        "--save_strategy",
        "no",
        "--logging_steps",
        "1",
        *extra,
    ]
    return sft_module.main(*sft_module.parse(argv))


def run_grpo(model: Path, tasks: Path, out: Path, *extra: str) -> dict:
    argv = [
        "--config",
        str(ROOT / "configs/grpo/tiny.yaml"),
        "--model_name_or_path",
        str(model),
        "--tasks_file",
        str(tasks),
        "--output_dir",
        str(out),
        "--report_to",
        "none",
        "--save_strategy",
        "no",
        *extra,
    ]
    return grpo_module.main(*grpo_module.parse(argv))
