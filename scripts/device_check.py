"""The paper recipe's training on a lent GPU machine (one H100 80 GB or H200; Python 3.12, torch, transformers,
accelerate and peft, but no vLLM, TRL or datasets; 15 minutes in all), which `scripts/gpu_check.py` cannot use: it
needs vLLM. TRL, datasets and the rest travel as wheels (`make device-wheels`, into the ignored .device-wheels/),
installed by this script into a scratch folder at its start.

Phases, each written to DIR/device_check.json as it ends (atomically), each skipped with its reason when the budget
left is below its estimate (ESTIMATE_S), each failure recorded as its error while the next phase runs:

1. `environment`: versions, where TRL and datasets were imported from, the GPU and its memory, and every carried
   wheel's requirement the machine does not meet (datasets wants a recent pyarrow: `make device-wheels PYARROW=1`);
2. `build`: Qwen3-4B's exact architecture with random weights and Qwen's tokenizer (`train.arch`; nothing downloaded);
3. `grpo_synthetic`: the update of configs/grpo/qwen3-4b.yaml (LoRA r/alpha/targets, no dropout, bf16, gradient
   checkpointing, its micro-batch, TRL's fused LM head, `train.trim`) on synthetic rollouts of 8k, 16k and 33.5k
   tokens, with the recipe's vllm_gpu_memory_utilization (0.35) of the GPU held back for vLLM: peak memory, seconds
   a step, and how many SDPA calls ran with an explicit mask rather than causal. The loss is GRPO's clipped ratio at
   ratio 1 with fixed advantages: what costs (the forward and backward at that length) is the trainer's;
4. `grpo_main`: 2 GRPO steps through the project's own `terminus.train.grpo.main` with transformers generation
   instead of vLLM (rollouts in local sandboxes): loss-mask tokens and gradient norms, computed on the GPU;
5. `trim`: the old-log-prob forward of a batch of episodes of mixed length with and without `train.trim`:
   seconds each and the largest log-prob difference;
6. `sft_synthetic`: SFT steps at configs/sft/qwen3-4b.yaml's shape (micro-batch 1 at max_length, its LoRA and rate).

`--tiny` rehearses every phase on CPU (fp32) at 1/32 of the lengths with the tests' tiny Qwen3 (`train.tiny`),
vLLM made unimportable and TRL/datasets taken from .device-wheels/ when it holds them (else from the environment),
and writes the same JSON. Random weights make the figures those of the machinery, not of learning.

    make device-wheels                                    # here, once: ~8 MB of wheels
    python scripts/device_check.py --tiny --out /tmp/dc   # CPU rehearsal, 20-45 s on 2 shared cores
    python3 scripts/device_check.py --out $OUT            # on the lent machine (docs/paper-run.md): < 7 minutes
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import importlib.metadata
import importlib.util
import json
import logging
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))  # the lent machine runs from a bare copy of the tree, nothing installed

from gpu_check import grpo_argv, run_steps  # noqa: E402  (scripts/ is on the path: this file's folder)

log = logging.getLogger("device_check")
WHEELS = ROOT / ".device-wheels"
GRPO_RECIPE = ROOT / "configs" / "grpo" / "qwen3-4b.yaml"
SFT_RECIPE = ROOT / "configs" / "sft" / "qwen3-4b.yaml"
LENGTHS = (8192, 16384, 33536)  # tokens of a rollout (prompt and episode); 33.5k: the recipe's 32k completion + 768
TINY = 32  # --tiny divides every length by this
PROMPT = 700  # tokens of a first prompt
# Seconds each phase is expected to take, model loading included. Device: estimates from the step sizes (not yet
# measured on a GPU: replace them with the first run's step_wall_s). Tiny: 2-4x what 2 shared cores took.
PHASES = ("environment", "build", "grpo_synthetic", "grpo_main", "trim", "sft_synthetic")
ESTIMATE_S = {
    "device": dict(zip(PHASES, (20, 90, 120, 120, 40, 60), strict=True)),
    "tiny": dict(zip(PHASES, (10, 5, 10, 30, 15, 15), strict=True)),
}


def install_wheels(folder: Path, only: tuple[str, ...] | None) -> str | None:
    """pip-install the carried wheels (those whose name starts with one of `only`, when given) into a scratch folder
    put first on sys.path, before anything imports them; None when there are none."""
    wheels = sorted(p for p in folder.glob("*.whl") if only is None or p.name.lower().startswith(only))
    if not wheels:
        return None
    site = Path(tempfile.mkdtemp(prefix="device-site-"))
    cmd = [sys.executable, "-m", "pip", "install", "-q", "--no-index", "--no-deps", "--no-compile"]
    subprocess.run([*cmd, "--target", str(site), *map(str, wheels)], check=True)
    sys.path.insert(0, str(site))
    os.environ["PYTHONPATH"] = os.pathsep.join([str(site), str(ROOT / "src"), os.environ.get("PYTHONPATH", "")])
    return str(site)


def unmet_requirements(folder: Path) -> list[str]:
    """Each carried wheel's requirement (extras aside) that the installed packages do not satisfy."""
    from packaging.requirements import Requirement

    unmet = []
    for wheel in sorted(folder.glob("*.whl")):
        dist = wheel.name.split("-")[0]
        try:
            lines = importlib.metadata.requires(dist) or []
        except importlib.metadata.PackageNotFoundError:
            unmet.append(f"{wheel.name} did not install")
            continue
        for line in lines:
            req = Requirement(line)
            if req.marker and not req.marker.evaluate({"extra": ""}):
                continue
            try:
                have = importlib.metadata.version(req.name)
            except importlib.metadata.PackageNotFoundError:
                unmet.append(f"{dist} needs {req}: not installed")
                continue
            if req.specifier and not req.specifier.contains(have, prereleases=True):
                unmet.append(f"{dist} needs {req}: {have} is installed")
    return unmet


@contextlib.contextmanager
def count_sdpa():
    """Counts transformers' SDPA calls by the attention they ask for: an explicit (B,1,L,L) mask, or causal. With
    gradient checkpointing a training step calls each layer's twice (the forward, then its recompute)."""
    import torch.nn.functional as F

    counts = {"masked": 0, "causal": 0}
    original = F.scaled_dot_product_attention

    def counted(*args, **kwargs):
        mask = kwargs.get("attn_mask", args[3] if len(args) > 3 else None)
        counts["masked" if mask is not None else "causal"] += 1
        return original(*args, **kwargs)

    F.scaled_dot_product_attention = counted
    try:
        yield counts
    finally:
        F.scaled_dot_product_attention = original


def fused_forward(model, input_ids, attention_mask, logits_to_keep, **kwargs):
    """The completion's log-probs as TRL's GRPO forward computes them (`_get_per_token_logps_and_entropies`: labels
    on the completion's real tokens, TRL's fused head, no full logits)."""
    labels = input_ids.masked_fill(attention_mask == 0, -100)
    labels[:, :-logits_to_keep] = -100
    out = model(input_ids=input_ids, attention_mask=attention_mask, labels=labels, fused_lm_head=True)
    return out.log_probs[:, -logits_to_keep:], None, None


class Check:
    """The run's settings and what phases hand on (the model's folder, the device)."""

    def __init__(self, args):
        import torch
        import yaml

        self.tiny, self.root = args.tiny, Path(tempfile.mkdtemp(prefix="device-check-"))
        self.grpo, self.sft = (yaml.safe_load(p.read_text()) for p in (GRPO_RECIPE, SFT_RECIPE))
        self.device = "cpu" if self.tiny else "cuda"
        self.dtype = torch.float32 if self.tiny else torch.bfloat16
        self.model_dir = self.root / "model"
        self.scale = TINY if self.tiny else 1

    def sync(self):
        import torch

        if self.device == "cuda":
            torch.cuda.synchronize()

    def memory(self) -> dict:
        import torch

        if self.device != "cuda":
            return {}
        return {
            "peak_allocated_gib": round(torch.cuda.max_memory_allocated() / 2**30, 2),
            "peak_reserved_gib": round(torch.cuda.max_memory_reserved() / 2**30, 2),
        }

    def policy(self, recipe: dict, dropout: float):
        """The model as the recipe trains it: TRL's fused head, gradient checkpointing, the recipe's LoRA."""
        import torch
        from peft import LoraConfig, get_peft_model
        from transformers import AutoModelForCausalLM
        from trl.trainer.utils import add_fused_lm_head

        free()
        model = AutoModelForCausalLM.from_pretrained(
            self.model_dir, dtype=self.dtype, attn_implementation="sdpa", device_map=self.device
        )  # straight onto the GPU: 8 GB through the CPU's memory first would cost seconds each phase
        add_fused_lm_head(model, temperature=recipe.get("temperature", 1.0))
        if recipe.get("gradient_checkpointing"):
            model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
            model.enable_input_require_grads()
        lora = LoraConfig(
            r=recipe["lora_r"], lora_alpha=recipe["lora_alpha"], lora_dropout=dropout,
            target_modules=recipe["lora_target_modules"], task_type="CAUSAL_LM",
        )  # fmt: skip
        model = get_peft_model(model, lora)
        model.train()  # from_pretrained gives eval mode, where transformers skips gradient checkpointing
        params = [p for p in model.parameters() if p.requires_grad]
        return model, params, torch.optim.AdamW(params, lr=float(recipe["learning_rate"]))

    def autocast(self):
        import torch

        return contextlib.nullcontext() if self.tiny else torch.autocast("cuda", dtype=torch.bfloat16)

    def batch(self, lengths: list[int], vocab: int, prompt: int):
        """TRL's layout: prompts of `prompt` tokens, completions right-padded to the longest; row i is lengths[i]."""
        import torch

        gen = torch.Generator().manual_seed(0)
        width = max(lengths)
        ids = torch.randint(0, vocab, (len(lengths), width), generator=gen)
        mask = torch.zeros_like(ids)
        for row, n in enumerate(lengths):
            mask[row, :n] = 1
        return ids.to(self.device), mask.to(self.device), width - prompt

    def step(self, model, params, optimizer, loss_of) -> dict:
        import torch

        self.sync()
        start = time.perf_counter()
        with self.autocast():
            loss = loss_of()
        loss.backward()
        grad_norm = torch.nn.utils.clip_grad_norm_(params, 1.0)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        self.sync()
        seconds = round(time.perf_counter() - start, 2)
        return {"seconds": seconds, "loss": float(loss.detach()), "grad_norm": float(grad_norm)}


def free():
    import gc

    import torch

    gc.collect()
    if torch.cuda.is_available():
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()


def environment(check: Check, site: str | None) -> dict:
    import datasets
    import peft
    import torch
    import transformers
    import trl

    info = {
        "python": sys.version.split()[0],
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "peft": peft.__version__,
        "trl": trl.__version__,
        "datasets": datasets.__version__,
        "trl_from": str(Path(trl.__file__).parent),
        "wheels_site": site,
        "vllm_importable": importlib.util.find_spec("vllm") is not None,
        "unmet_requirements": unmet_requirements(WHEELS),
    }
    for name in ("accelerate", "pyarrow", "huggingface_hub", "tokenizers"):
        info[name] = importlib.metadata.version(name)
    if torch.cuda.is_available():
        free_b, total_b = torch.cuda.mem_get_info()
        info |= {"gpu": torch.cuda.get_device_name(0), "total_gib": round(total_b / 2**30, 1)}
        info["free_gib"] = round(free_b / 2**30, 1)
    elif not check.tiny:
        raise RuntimeError("no GPU: run with --tiny, or on the lent machine")
    return info


def build(check: Check) -> dict:
    if check.tiny:
        from terminus.train.tiny import build_tiny_model

        build_tiny_model(check.model_dir)
        return {"model": "tiny Qwen3 (train.tiny)", **json.loads((check.model_dir / "terminus_tiny.json").read_text())}
    from terminus.train.arch import build_reference_model

    return {"model": "Qwen3-4B, random weights", **build_reference_model(check.model_dir, device="cuda")}


def grpo_loss(model, ids, mask, keep, advantages):
    """GRPO's loss at ratio 1 (the first of a step's updates), through the trainer's trimmed forward."""
    import torch

    from terminus.train.trim import per_token_logps_trimmed

    logps, _, _ = per_token_logps_trimmed(fused_forward, model, ids, mask, keep, ids.size(0))
    weights = mask[:, -keep:].float()
    ratio = torch.exp(logps - logps.detach())  # 1, with the gradient of the new log-probs
    return -(ratio * advantages * weights).sum() / weights.sum()


def grpo_synthetic(check: Check, deadline: float) -> dict:
    import torch

    share = float(check.grpo["vllm_gpu_memory_utilization"])
    if check.device == "cuda":  # what colocated vLLM would hold is not the trainer's
        torch.cuda.set_per_process_memory_fraction(1 - share)
    model, params, optimizer = check.policy(check.grpo, float(check.grpo.get("lora_dropout", 0.0)))
    rows = int(check.grpo["per_device_train_batch_size"])
    vocab, figures = model.config.vocab_size, {"held_for_vllm": share, "micro_batch": rows, "lengths": {}}
    for full in LENGTHS:
        length = full // check.scale
        if figures["lengths"] and time.perf_counter() > deadline:
            figures["lengths"][str(full)] = {"skipped": "the budget ran out"}
            continue
        # the longest episode and shorter ones padded to it, as TRL's generation batch hands them over
        ids, mask, keep = check.batch([length] + [length * 3 // 4] * (rows - 1), vocab, PROMPT // check.scale)
        advantages = torch.linspace(-1, 1, rows, device=check.device)[:, None]
        loss_of = functools.partial(grpo_loss, model, ids, mask, keep, advantages)
        free()
        try:
            with count_sdpa() as sdpa:
                steps = [check.step(model, params, optimizer, loss_of) for _ in range(2)]
            figures["lengths"][str(full)] = {"tokens": length, "steps": steps, "sdpa_calls": sdpa, **check.memory()}
        except torch.OutOfMemoryError as err:
            figures["lengths"][str(full)] = {"tokens": length, "error": f"OutOfMemoryError: {err}"[:500]}
            figures["lengths"][str(full)] |= check.memory()
            break
    return figures


def token_reward(completion_ids, **kwargs) -> list[float]:
    """A stand-in reward that differs whenever the sampled tokens do: random weights run every turn to its token
    limit, so all episodes have one length (paper_path_check's length reward would be equal: no advantage, no
    gradient), but sampled at temperature 1 they differ in their tokens."""
    return [sum(ids) / max(1, len(ids)) / 1e5 for ids in completion_ids]


def grpo_main(check: Check) -> dict:
    from terminus.io import read_jsonl
    from terminus.tasks.build import small_corpus
    from terminus.train import grpo

    free()
    (check.root / "corpus").mkdir(exist_ok=True)
    tasks = small_corpus(check.root / "corpus", ["python"], 2, ["pass", "fail"])
    argv = grpo_argv(str(check.model_dir), tasks, check.root / "grpo", 2, "local")
    argv += ["--use_vllm", "false", "--per_device_train_batch_size", "4", "--num_generations", "4"]
    argv += ["--gradient_accumulation_steps", "1", "--max_turns", "2", "--max_new_tokens", "48"]
    argv += ["--log_completions", "false", "--learning_rate", "1e-3" if check.tiny else "1e-5"]
    if check.tiny:
        argv += ["--use_cpu", "true", "--bf16", "false", "--dtype", "float32", "--gradient_checkpointing", "false"]
    start = time.perf_counter()
    grpo.main(*grpo.parse(argv), reward_funcs=[token_reward])
    rows = [r for r in read_jsonl(check.root / "grpo" / "metrics.jsonl") if "loss" in r and "grad_norm" in r]
    return {
        "wall_s": round(time.perf_counter() - start, 1),
        "steps": [{k: r.get(k) for k in ("loss", "grad_norm", "step_time", "episode/loss_mask_tokens")} for r in rows],
        "loss_mask_tokens": round(sum(r["episode/loss_mask_tokens"] for r in rows) * 4),
        "device": check.device,
        **check.memory(),
    }


def trim_on_off(check: Check) -> dict:
    import torch

    from terminus.train.trim import per_token_logps_trimmed

    model, _, _ = check.policy(check.grpo, 0.0)
    model.eval()
    longest = LENGTHS[1] // check.scale
    lengths = [longest // 8 * (i + 1) for i in range(8)]  # eight episodes from 1/8 of the longest to all of it
    ids, mask, keep = check.batch(lengths, model.config.vocab_size, PROMPT // check.scale)
    chunk = int(check.grpo["per_device_train_batch_size"])

    def untrimmed():
        parts = [fused_forward(model, ids[i : i + chunk], mask[i : i + chunk], keep)[0] for i in range(0, 8, chunk)]
        return torch.cat(parts)

    def trimmed():
        return per_token_logps_trimmed(fused_forward, model, ids, mask, keep, chunk)[0]

    timed = {"off_s": float("inf"), "on_s": float("inf")}
    with torch.no_grad(), check.autocast():
        # twice each, alternating, the faster kept: the first forward also pays for warming up the allocator
        for name, run in (("off", untrimmed), ("on", trimmed)) * 2:
            check.sync()
            start = time.perf_counter()
            with count_sdpa() as sdpa:
                timed[name] = run()
            check.sync()
            timed[f"{name}_s"] = round(min(timed[f"{name}_s"], time.perf_counter() - start), 2)
            timed[f"{name}_sdpa"] = sdpa
    scored = mask[:, -keep:].bool()
    diff = (timed["on"].float() - timed["off"].float())[scored].abs().max()
    return {
        "episodes": lengths,
        "seconds_off": timed["off_s"],
        "seconds_on": timed["on_s"],
        "speedup": round(timed["off_s"] / max(timed["on_s"], 1e-9), 2),
        "sdpa_off": timed["off_sdpa"],
        "sdpa_on": timed["on_sdpa"],
        "max_abs_logp_diff": float(diff),
    }


def sft_synthetic(check: Check) -> dict:
    model, params, optimizer = check.policy(check.sft, float(check.sft.get("lora_dropout", 0.0)))
    length = int(check.sft["max_length"]) // check.scale
    ids, mask, keep = check.batch([length] * int(check.sft["per_device_train_batch_size"]), model.config.vocab_size, 1)

    def loss_of():  # SFTTrainer's loss through the fused head: the mean negative log-likelihood of the labels
        logps, _, _ = fused_forward(model, ids, mask, keep)
        return -logps.mean()

    free()
    steps = [check.step(model, params, optimizer, loss_of) for _ in range(2)]
    return {"max_length": length, "micro_batch": ids.size(0), "steps": steps, **check.memory()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tiny", action="store_true", help="Rehearse every phase on CPU at tiny scale.")
    parser.add_argument("--out", type=Path, required=True, help="Folder for device_check.json.")
    parser.add_argument("--budget-s", type=float, default=None, help="Seconds in all (default 400; --tiny 480).")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    budget = args.budget_s if args.budget_s is not None else (480.0 if args.tiny else 400.0)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    sys.modules["vllm"] = None  # absent on the lent machine; here too, so the rehearsal cannot lean on it
    # on the device every carried wheel; in the rehearsal only TRL's and datasets' (the others are for Python 3.12)
    site = install_wheels(WHEELS, ("trl-", "datasets-") if args.tiny else None)
    if importlib.util.find_spec("trl") is None:
        raise SystemExit(f"TRL does not import and {WHEELS.name}/ holds no wheels: run `make device-wheels` first")
    os.chdir(ROOT)  # the recipes' relative paths
    check = Check(args)
    deadline = started + budget
    phases = [
        ("environment", lambda result: environment(check, site)),
        ("build", lambda result: build(check)),
        ("grpo_synthetic", lambda result: grpo_synthetic(check, deadline)),
        ("grpo_main", lambda result: grpo_main(check)),
        ("trim", lambda result: trim_on_off(check)),
        ("sft_synthetic", lambda result: sft_synthetic(check)),
    ]
    result = {"mode": "tiny" if args.tiny else "device", "budget_s": budget, "random_weights": True}
    args.out.mkdir(parents=True, exist_ok=True)
    estimates = ESTIMATE_S[result["mode"]]
    run_steps(phases, result, args.out / "device_check.json", deadline=deadline, estimates=estimates)
    result["wall_s"] = round(time.perf_counter() - started, 1)
    from terminus.io import write_json_atomic

    write_json_atomic(args.out / "device_check.json", result)
    print(json.dumps(result, indent=1))
    return 1 if any(isinstance(v, dict) and "error" in v for v in result.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
