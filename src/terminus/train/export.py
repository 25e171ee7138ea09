"""`terminus export`: a trained checkpoint -> a self-contained model folder (LoRA merged into the base,
safetensors, tokenizer, chat template, generation config, model card), verified to load in transformers and
in vLLM with the same greedy output on a fixed prompt."""

from __future__ import annotations

import json
import logging
import shutil
from pathlib import Path

from terminus.agent.template import CHAT_KWARGS, install
from terminus.agent.terminal import TERMINAL_TOOL
from terminus.io import write_json_atomic

log = logging.getLogger(__name__)
CHECK_MESSAGES = [
    {"role": "system", "content": "You are an execution subagent. Run commands with the terminal tool."},
    {"role": "user", "content": "Run the unit tests and tell me what fails and why."},
]


def merge(model_dir: Path, base: str | None = None):
    """The model with any LoRA adapter merged in, and its tokenizer."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    model_dir = Path(model_dir)
    adapter = model_dir / "adapter_config.json"
    if adapter.is_file():
        from peft import PeftModel

        base = base or json.loads(adapter.read_text())["base_model_name_or_path"]
        model = AutoModelForCausalLM.from_pretrained(
            base, dtype=torch.bfloat16 if torch.cuda.is_available() else "auto"
        )
        model = PeftModel.from_pretrained(model, str(model_dir)).merge_and_unload()
        tokenizer_source = model_dir if (model_dir / "tokenizer_config.json").is_file() else base
    else:
        model = AutoModelForCausalLM.from_pretrained(str(model_dir), dtype="auto")
        tokenizer_source = model_dir
    return model, install(AutoTokenizer.from_pretrained(str(tokenizer_source))), base


def model_card(name: str, base: str, counts: dict | None, recipes: list[Path], summary: dict | None) -> str:
    lines = [
        f"# {name}",
        "",
        "An Execution Subagent model trained with terminus (SFT on expert subagent trajectories, "
        "then GRPO with a rubric judge and a fact checker as the reward).",
        "",
        f"- Base model: `{base}`",
    ]
    if counts:
        lines += [
            "",
            "## Training data",
            "",
            f"- SFT conversations: {counts.get('train')} train, {counts.get('validation')} validation",
            f"- By language: {counts.get('by_language')}",
            f"- By task type: {counts.get('by_type')}",
            f"- By source: {counts.get('by_source')}",
        ]
    for recipe in recipes:
        if recipe.is_file():
            lines += ["", f"## Recipe `{recipe.name}`", "", "```yaml", recipe.read_text().strip(), "```"]
    if summary:
        lines += ["", "## Evaluation (held-out split)", "", "```json", json.dumps(summary, indent=1), "```"]
    lines += [
        "",
        "## Use",
        "",
        "The subagent has one tool, `run_in_terminal(command, timeout_ms)`, and answers in "
        "`<final_answer>` with one `Command:`/`Summary:` pair per command. Run it with "
        "`terminus exec --policy vllm --model <this folder> --repo <repo> --query '...'`.",
    ]
    return "\n".join(lines) + "\n"


def greedy_transformers(model_dir: Path, tokens: int) -> tuple[list[int], list[int]]:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(model_dir))
    model = AutoModelForCausalLM.from_pretrained(str(model_dir), dtype="auto").eval()
    prompt = tokenizer.apply_chat_template(
        CHECK_MESSAGES,
        tools=[TERMINAL_TOOL],
        add_generation_prompt=True,
        tokenize=True,
        return_dict=True,
        **CHAT_KWARGS,
    )["input_ids"]
    with torch.no_grad():
        out = model.generate(
            torch.tensor([prompt]),
            max_new_tokens=tokens,
            do_sample=False,
            min_new_tokens=tokens,
            pad_token_id=tokenizer.pad_token_id,
        )
    return list(prompt), out[0, len(prompt) :].tolist()


def greedy_vllm(model_dir: Path, prompt: list[int], tokens: int) -> list[int]:
    import os

    from vllm import LLM, SamplingParams

    os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "1")
    llm = LLM(model=str(model_dir), enforce_eager=True, max_model_len=4096, dtype="float32")
    params = SamplingParams(temperature=0.0, max_tokens=tokens, min_tokens=tokens, ignore_eos=True)
    out = llm.generate([{"prompt_token_ids": prompt}], params, use_tqdm=False)
    return list(out[0].outputs[0].token_ids)


def export(
    model_dir: Path,
    out: Path,
    *,
    base: str | None = None,
    counts: Path | None = None,
    recipes: list[Path] = (),
    summary: Path | None = None,
    check_vllm: bool = True,
    check_tokens: int = 16,
) -> dict:
    from transformers import GenerationConfig

    model, tokenizer, base_id = merge(model_dir, base)
    trained = _read(Path(model_dir).parent / "train_summary.json") or {}
    base_id = base_id or trained.get("base_model")
    staging = out.with_name(out.name + ".tmp")
    shutil.rmtree(staging, ignore_errors=True)
    model.save_pretrained(str(staging), safe_serialization=True)
    tokenizer.save_pretrained(str(staging))
    GenerationConfig(
        eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.pad_token_id, do_sample=False
    ).save_pretrained(str(staging))
    (staging / "README.md").write_text(
        model_card(
            out.name,
            str(base_id or model.config.name_or_path),
            _read(counts),
            [Path(r) for r in recipes],
            _read(summary),
        )
    )
    check = {"tokens": check_tokens}
    prompt, check["transformers"] = greedy_transformers(staging, check_tokens)
    if check_vllm:
        check["vllm"] = greedy_vllm(staging, prompt, check_tokens)
        check["match"] = check["vllm"] == check["transformers"]
    else:
        check["vllm"], check["match"] = None, None
    write_json_atomic(staging / "export_check.json", check)
    shutil.rmtree(out, ignore_errors=True)
    staging.rename(out)
    return check


def _read(path: Path | None) -> dict | None:
    if path and Path(path).is_file():
        return json.loads(Path(path).read_text())
    return None
