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


def _recipe_argv(recipe: str, model: Path, out: Path, **options: object) -> list[str]:
    """The arguments of the recipe's tiny config on `model` into `out`, unreported and unsaved, with `options`
    (each `name=value` as `--name value`, in the recipe's own spelling)."""
    argv = ["--config", str(ROOT / "configs" / recipe / "tiny.yaml"), "--model_name_or_path", str(model)]
    argv += ["--output_dir", str(out), "--report_to", "none", "--save_strategy", "no"]
    for name, value in options.items():
        argv += [f"--{name}", str(value)]
    return argv


def run_sft(model: Path, data: Path, out: Path, *extra: str) -> dict:
    argv = _recipe_argv("sft", model, out, dataset_path=data, eval_strategy="no", logging_steps=1)
    return sft_module.main(*sft_module.parse([*argv, *extra]))


def run_grpo(model: Path, tasks: Path, out: Path, *extra: str) -> dict:
    argv = _recipe_argv("grpo", model, out, tasks_file=tasks)
    return grpo_module.main(*grpo_module.parse([*argv, *extra]))
