"""`terminus sft --recipe configs/sft/<recipe>.yaml [--key value ...]`: TRL's SFTTrainer on the dataset of
`terminus sft-data`, assistant-only loss over multi-turn tool-calling conversations.

TRL-parser style: `main(script_args, training_args, model_args)` plus a parser that reads the YAML recipe and
lets flags override it. Also runnable as `python -m terminus.train.sft` (e.g. under `accelerate launch`).
"""

from __future__ import annotations

import hashlib
import json
import logging
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path

from terminus.agent.template import TemplateError, describe, install
from terminus.agent.terminal import TERMINAL_TOOL
from terminus.config import resolve_model
from terminus.determinism import deterministic_torch
from terminus.io import MissingFileError
from terminus.train.run import MetricsJsonl, dry_run_report, parse_recipe, run_inputs, train_and_save

log = logging.getLogger(__name__)


@dataclass
class SFTScriptArguments:
    dataset_path: str = field(metadata={"help": "Dataset folder written by `terminus sft-data`."})
    dry_run: bool = field(default=False, metadata={"help": "Parse and validate everything, train nothing."})


def dataset_stamp(path: str | Path) -> str:
    """A saved dataset's identity: its files' names and sizes, without the `cache-*` files that tokenizing it writes
    beside them (written during the first run, they would make its resubmission look like other data)."""

    files = sorted(p for p in Path(path).rglob("*") if p.is_file() and not p.name.startswith("cache-"))
    listing = [(str(p.relative_to(path)), p.stat().st_size) for p in files]
    return hashlib.sha256(json.dumps(listing).encode()).hexdigest()[:16]


def check_assistant_mask(tokenizer, messages: list[dict]) -> None:
    """One clear line, before any training, when the template marks no assistant token (TRL would train on nothing)."""

    rendered = tokenizer.apply_chat_template(
        messages, tools=[TERMINAL_TOOL], tokenize=True, return_dict=True, return_assistant_tokens_mask=True
    )
    if not any(rendered["assistant_masks"]):
        raise TemplateError(
            f"{describe(tokenizer)} marks no assistant token of a training conversation (no {{% generation %}} "
            "markers): assistant-only loss would be 0"
        )


def main(script_args: SFTScriptArguments, training_args, model_args) -> dict:
    import torch
    from datasets import load_from_disk
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from trl import SFTTrainer, get_peft_config

    deterministic_torch(training_args.seed)
    model_id = resolve_model(model_args.model_name_or_path)
    if script_args.dry_run:
        return dry_run_report(training_args, model_args, ("assistant_only_loss", "max_length"))
    dataset_path = resolve_model(script_args.dataset_path)
    if not Path(dataset_path).is_dir():
        raise MissingFileError(f"dataset {dataset_path} does not exist (make it with `terminus sft-data`)")
    data = load_from_disk(dataset_path)
    tokenizer = install(AutoTokenizer.from_pretrained(model_id))  # Qwen3-4B's own has no generation markers
    if training_args.assistant_only_loss:
        check_assistant_mask(tokenizer, data["train"][0]["messages"])
    dtype = model_args.dtype if model_args.dtype in (None, "auto") else getattr(torch, model_args.dtype)
    model = AutoModelForCausalLM.from_pretrained(
        model_id, dtype=dtype, attn_implementation=model_args.attn_implementation
    )
    trainer = SFTTrainer(
        model=model,
        args=training_args,
        train_dataset=data["train"],
        eval_dataset=data["validation"] if "validation" in data and training_args.eval_strategy != "no" else None,
        processing_class=tokenizer,
        peft_config=get_peft_config(model_args),
        callbacks=[MetricsJsonl(training_args.output_dir)],
    )
    inputs = run_inputs(training_args, model_args, script=asdict(script_args), dataset=dataset_stamp(dataset_path))
    return train_and_save(trainer, tokenizer, training_args, model_args, inputs)


def parse(argv: list[str]):
    from trl import ModelConfig, SFTConfig

    return parse_recipe((SFTScriptArguments, SFTConfig, ModelConfig), argv)


if __name__ == "__main__":
    main(*parse(sys.argv[1:]))
