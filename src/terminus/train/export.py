"""`terminus export`: a trained checkpoint -> a self-contained model folder (LoRA merged into the base,
safetensors, tokenizer, chat template, generation config, model card), verified to load in vLLM and score a fixed
episode as the trained model does (`parity`)."""

from __future__ import annotations

import contextlib
import gc
import json
import logging
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

from terminus.agent.template import install
from terminus.agent.terminal import TERMINAL_TOOL
from terminus.io import write_json_atomic
from terminus.models.serve import _cuda, fitting_memory_fraction

log = logging.getLogger(__name__)
CHECK_MESSAGES = [
    {"role": "system", "content": "You are an execution subagent. Run commands with the terminal tool."},
    {"role": "user", "content": "Run the unit tests and tell me what fails and why."},
]
CHECK_REPLY = [
    {
        "role": "assistant",
        "content": "",
        "tool_calls": [
            {
                "type": "function",
                "function": {"name": "run_in_terminal", "arguments": {"command": "pytest -q", "timeout_ms": 60000}},
            }
        ],
    },
    {"role": "tool", "content": "F.\nFAILED tests/test_core.py::test_total - assert 3 == 4\n1 failed, 1 passed\n"},
    {
        "role": "assistant",
        "content": "<final_answer>\nCommand: pytest -q\nSummary: 1 failed (tests/test_core.py::test_total), 1 passed."
        "\n</final_answer>",
    },
]
PARITY_TOLERANCE = 0.02
"""Nats a token by which vLLM's float32 log-probabilities of the check episode may differ from the trained model's;
a correct export differs by rounding (~1e-6 on the CPU, ~1e-3 where GPU kernels reorder sums)."""


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


def check_ids(tokenizer) -> list[int]:
    """A fixed episode through the exported chat template (a tool call, its output, a final answer): the tokens
    both engines are scored on."""
    return list(
        tokenizer.apply_chat_template(
            [*CHECK_MESSAGES, *CHECK_REPLY], tools=[TERMINAL_TOOL], tokenize=True, return_dict=True
        )["input_ids"]
    )


def reference_logprobs(model, ids: list[int], device: str) -> list[float]:
    """log p(token | tokens before it) for every token after the first, from the model in memory, in float32."""
    import torch

    model = model.to(device=device, dtype=torch.float32).eval()
    with torch.no_grad():
        logits = model(torch.tensor([ids], device=device)).logits[0, :-1].float()
    picked = logits.log_softmax(-1).gather(-1, torch.tensor(ids[1:], device=device)[:, None])
    return picked[:, 0].tolist()


def vllm_logprobs(model_dir: Path, ids: list[int]) -> list[float]:
    """The same log-probabilities from vLLM loading the exported folder, in float32 (vLLM's prompt logprobs).

    vLLM runs in a child process that hands back its figures and ends without Python's teardown: an engine left to
    the interpreter's exit aborted the export after it had passed ("terminate called without an active exception",
    seen in a smoke run), and the child's exit gives its GPU memory back at once."""
    with tempfile.TemporaryFile() as errors:
        child = subprocess.Popen(
            [sys.executable, "-c", "from terminus.train.export import _vllm_child; _vllm_child()", str(model_dir)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=errors,
            text=True,
            start_new_session=True,  # its engine's processes too: all of them go when the figures are in
        )
        try:
            child.stdin.write(json.dumps(ids))
            child.stdin.close()
            # The figures arrive on one line; the engine's processes may hold the pipe open after, so read to the
            # line, not to the end of the stream.
            reply = next((line for line in child.stdout if line.startswith(_CHILD_MARK)), None)
            with contextlib.suppress(subprocess.TimeoutExpired):
                child.wait(timeout=60)
        finally:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(child.pid, signal.SIGKILL)
            child.wait()
            child.stdout.close()
        if reply is None:
            errors.seek(0)
            tail = errors.read().decode(errors="replace").strip()[-800:]
            raise RuntimeError(f"vLLM could not score {model_dir}: {tail}")
    return json.loads(reply.removeprefix(_CHILD_MARK))


_CHILD_MARK = "terminus-vllm-logprobs: "


def _vllm_child() -> None:
    """In the child: score the ids read from stdin, print them, and leave without tearing vLLM down."""
    from vllm import LLM, SamplingParams

    ids = json.loads(sys.stdin.read())
    os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "1")
    engine = {"gpu_memory_utilization": fitting_memory_fraction()} if _cuda() else {}
    llm = LLM(model=sys.argv[1], enforce_eager=True, max_model_len=4096, dtype="float32", **engine)
    params = SamplingParams(temperature=0.0, max_tokens=1, prompt_logprobs=0)
    out = llm.generate([{"prompt_token_ids": ids}], params, use_tqdm=False)[0]
    logprobs = [entry[token].logprob for token, entry in zip(ids[1:], out.prompt_logprobs[1:], strict=True)]
    print(_CHILD_MARK + json.dumps(logprobs), flush=True)
    with contextlib.suppress(Exception):  # the engine's own processes first; the parent kills what is left
        llm.llm_engine.engine_core.shutdown()
    sys.stderr.flush()
    os._exit(0)


def parity(model, tokenizer, model_dir: Path, tolerance: float = PARITY_TOLERANCE) -> dict:
    """Does vLLM, loading the exported folder, score a fixed episode as the trained model in memory does?

    Like with like: both sides in float32 (exact for bf16 weights), on the same device class (CUDA where vLLM runs
    on a GPU, else the CPU), teacher-forced on the same tokens, so nothing but the export itself can make them
    disagree; greedy decoding would turn a near-tie into a different continuation. A correct export agrees to
    rounding (below 1e-3 nats a token); a wrong or missing weight, config or template moves them by far more."""

    import torch

    device = "cuda" if torch.cuda.is_available() else "cpu"
    ids = check_ids(tokenizer)
    reference = reference_logprobs(model, ids, device)
    model.to("cpu")  # the reference's GPU memory goes back before vLLM measures what is free
    gc.collect()
    if device == "cuda":
        torch.cuda.empty_cache()
    served = vllm_logprobs(model_dir, ids)
    diff = max(abs(a - b) for a, b in zip(reference, served, strict=True))
    return {
        "tokens": len(ids),
        "dtype": "float32",
        "device": device,
        "max_abs_logprob_diff": round(diff, 3),  # a correct export's is noise; three decimals repeat run to run
        "tolerance": tolerance,
        "match": diff <= tolerance,
    }


def export(
    model_dir: Path,
    out: Path,
    *,
    base: str | None = None,
    counts: Path | None = None,
    recipes: list[Path] = (),
    summary: Path | None = None,
    check_vllm: bool = True,
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
    check = parity(model, tokenizer, staging) if check_vllm else {"match": None}
    write_json_atomic(staging / "export_check.json", check)
    if check["match"] is False:  # left in staging for a look, never published as the export
        return check | {"folder": str(staging)}
    shutil.rmtree(out, ignore_errors=True)
    staging.rename(out)
    return check


def _read(path: Path | None) -> dict | None:
    if path and Path(path).is_file():
        return json.loads(Path(path).read_text())
    return None
