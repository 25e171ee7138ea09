"""A tiny Qwen3-architecture model with its own tokenizer, built locally: the smoke scale's base model and the
tests' model. It loads through the same `from_pretrained` code as `Qwen/Qwen3-4B`."""

from __future__ import annotations

import json
import logging
from pathlib import Path

from terminus.agent import trajectory
from terminus.agent.template import install
from terminus.determinism import deterministic_torch
from terminus.io import read_jsonl
from terminus.settings import TinyModel, field_default
from terminus.timing import model_view

log = logging.getLogger(__name__)

ROOT = Path(__file__).resolve().parents[3]
SPECIAL = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
# Ordinary (non-special) tokens: vLLM strips special tokens before its tool parser sees the text.
MARKUP = [
    "<tool_call>",
    "</tool_call>",
    "<tool_response>",
    "</tool_response>",
    "<final_answer>",
    "</final_answer>",
    "<think>",
    "</think>",
    "Command:",
    "Summary:",
    '{"name": "run_in_terminal", "arguments": ',
]


def _seed_corpus() -> list[str]:
    """Text the tokenizer is trained on beside the corpus: the prompts, template and tool schema a model reads, and
    the example repositories' code and output. Never the package's own source: the tokenizer (and so every smoke
    table after it) moved with each edit under src/ (a renamed argument in sandbox/output.py changed SFT's token
    counts from step 5), so no refactor could keep the tables."""
    # sorted: a directory lists its files in an order of its own, and the BPE trainer's ties depend on order
    texts = [p.read_text() for p in sorted((ROOT / "configs" / "agent").glob("*")) if p.is_file()]
    texts += [p.read_text() for p in sorted((ROOT / "examples").rglob("*")) if p.is_file()]
    return texts


def corpus_texts(trajectories: Path) -> list[str]:
    """The seed corpus plus what a model reads of the trajectories (`model_view`: timing text normalised, so that
    two runs of one seed train the same tokenizer)."""

    texts = _seed_corpus()
    for record in read_jsonl(trajectories, trajectory.FIELDS):
        messages = model_view(record.get("messages", []))
        texts += [m.get("content") or "" for m in messages]
        texts += [json.dumps(c) for m in messages for c in m.get("tool_calls") or []]
    return texts


def build_tokenizer(texts: list[str], vocab_size: int = 4096):
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size, special_tokens=SPECIAL, initial_alphabet=pre_tokenizers.ByteLevel.alphabet()
    )
    tok.train_from_iterator(texts, trainer=trainer)
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok, eos_token="<|im_end|>", pad_token="<|endoftext|>", bos_token=None, unk_token=None
    )
    fast.add_tokens(MARKUP)  # whole tokens, not special
    install(fast)  # the template Qwen3-4B is trained with (terminus.agent.template)
    return fast


def build_tiny_model(
    out: Path,
    texts: list[str] | None = None,
    seed: int = 0,
    vocab_size: int = 4096,
    hidden_size: int = field_default(TinyModel, "hidden_size"),
    layers: int = field_default(TinyModel, "layers"),
) -> Path:
    """Write a Hugging Face model folder (config, safetensors, tokenizer, chat template, generation config)."""
    from transformers import GenerationConfig, Qwen3Config, Qwen3ForCausalLM

    deterministic_torch(seed)
    tokenizer = build_tokenizer(texts or _seed_corpus(), vocab_size)
    config = Qwen3Config(
        vocab_size=len(tokenizer),
        hidden_size=hidden_size,
        intermediate_size=3 * hidden_size,
        num_hidden_layers=layers,
        num_attention_heads=hidden_size // 32,
        num_key_value_heads=max(1, hidden_size // 64),
        head_dim=32,
        max_position_embeddings=8192,
        tie_word_embeddings=True,
        eos_token_id=tokenizer.convert_tokens_to_ids("<|im_end|>"),
        pad_token_id=tokenizer.pad_token_id,
        bos_token_id=None,
        torch_dtype="float32",
    )
    model = Qwen3ForCausalLM(config)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out, safe_serialization=True)
    tokenizer.save_pretrained(out)
    GenerationConfig(
        eos_token_id=config.eos_token_id, pad_token_id=config.pad_token_id, do_sample=False
    ).save_pretrained(out)
    params = sum(p.numel() for p in model.parameters())
    (out / "terminus_tiny.json").write_text(json.dumps({"parameters": params, "seed": seed}) + "\n")
    log.info("tiny model with %d parameters written to %s", params, out)
    return out
