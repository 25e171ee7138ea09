"""`terminus grpo --config configs/grpo/<recipe>.yaml [--key value ...]`: TRL's GRPOTrainer where every rollout
is a real subagent episode in a sandbox.

The rollout (TRL's `rollout_func`) runs the batch's episodes in lockstep (`terminus.collect.lockstep`): our own
loop, prompts and limits (`ExecutionSubagent`, exactly as at inference), the commands of all episodes concurrently in
their own sandboxes, and at every turn one batched generation for all live episodes, by TRL's vLLM engine when the
recipe sets `use_vllm` (weights synced by TRL) and by batched transformers generation otherwise. The task's query
is forwarded as is, isolated from any main agent. Each episode is kept as the token sequence it was generated as
(`models.generate.EpisodeTokens`): the prompt is the system and user turns, the completion everything after, ending
on the last sampled `<|im_end|>` of a finished episode (so TRL counts it terminated; a cut one stays truncated), and
`env_mask` marks the token ids the model sampled, exactly as sampled, so that tool output and injected messages
carry no loss. The reward is the judge's Scorer.
"""

from __future__ import annotations

import contextlib
import logging
import os
import statistics
import sys
from dataclasses import dataclass, field
from pathlib import Path

from terminus.agent.template import TemplateError, describe, install
from terminus.config import resolve_model as resolve
from terminus.train.sft import MetricsJsonl, dry_run_report, parse_recipe, train_and_save

log = logging.getLogger(__name__)


@dataclass
class GRPOScriptArguments:
    tasks_file: str = field(metadata={"help": "Validated task file; the prompts are its tasks."})
    splits: list[str] = field(default_factory=lambda: ["train"], metadata={"help": "Splits to train on."})
    max_turns: int = field(default=10, metadata={"help": "Turn limit per rollout (as at inference)."})
    max_new_tokens: int = field(default=256, metadata={"help": "Tokens per assistant turn."})
    sandbox: str | None = field(default=None, metadata={"help": "Sandbox backend (default: the experiment config's)."})
    experiment_config: str = field(
        default="configs/config.yaml", metadata={"help": "For the judge and sandbox settings."}
    )
    references: str | None = field(default=None, metadata={"help": "Expert trajectories, the judge's references."})
    use_llm_judge: bool = field(default=False, metadata={"help": "Add the LLM judge of the experiment config."})
    max_tasks: int | None = field(
        default=None,
        metadata={
            "help": "Train on this many of the splits' tasks (a sample drawn with the seed): with few tasks every "
            "quarter of the steps sees the same ones, so the reward's rise is learning, not easier tasks."
        },
    )
    dry_run: bool = field(default=False, metadata={"help": "Parse and validate everything, train nothing."})


def ratio_spread(ratio, mask, mode: str, clip_min: float | None, clip_max: float | None) -> dict[str, float]:
    """The spread of TRL's vLLM importance-sampling ratio over the tokens it weighs (`mask`): its standard deviation
    and the share of those tokens the mode cut (clamped to a bound for `*_truncate`, zeroed for `*_mask`). TRL
    itself logs min, mean and max."""
    import torch

    values = ratio[mask.bool()] if ratio.shape == mask.shape else ratio.flatten()
    if values.numel() == 0:
        return {}
    if mode.endswith("_mask"):
        cut = values == 0
    else:
        cut = torch.zeros_like(values, dtype=torch.bool)
        if clip_max is not None:
            cut |= values >= clip_max * (1 - 1e-6)
        if clip_min is not None:
            cut |= values <= clip_min * (1 + 1e-6)
    std = values.float().std().item() if values.numel() > 1 else 0.0
    return {"std": std, "cut_fraction": cut.float().mean().item()}


def grpo_trainer_class():
    """TRL's GRPOTrainer, plus the spread of the importance-sampling ratio in the metrics."""
    from trl import GRPOTrainer

    class TerminusGRPOTrainer(GRPOTrainer):
        def _generate_and_score_completions(self, inputs):
            output = super()._generate_and_score_completions(inputs)
            ratio = output.get("importance_sampling_ratio")
            if ratio is not None:
                mask = output["completion_mask"]
                if "tool_mask" in output:
                    mask = mask * output["tool_mask"]
                spread = ratio_spread(
                    ratio,
                    mask,
                    self.vllm_importance_sampling_mode,
                    self.vllm_importance_sampling_clip_min,
                    self.vllm_importance_sampling_clip_max,
                )
                mode = "train" if self.model.training else "eval"
                for key, value in spread.items():
                    self._metrics[mode][f"sampling/importance_sampling_ratio/{key}"].append(value)
            return output

    return TerminusGRPOTrainer


def make_generator(trainer, model, tokenizer, max_new_tokens: int):
    """TRL's own vLLM engine when the recipe sets `use_vllm`, else batched transformers generation."""
    from terminus.models.generate import TransformersGenerator, TRLVLLMGenerator

    if trainer.args.use_vllm:
        return TRLVLLMGenerator(trainer, max_new_tokens)
    return TransformersGenerator(
        model,
        tokenizer,
        max_new_tokens,
        temperature=trainer.args.temperature,
        name="grpo",
        chat_kwargs=trainer.chat_template_kwargs,  # the recipe's enable_thinking
    )


def make_rollout(tasks: dict, tasks_file: Path, script_args: GRPOScriptArguments):
    from functools import partial

    from terminus.collect.lockstep import run_lockstep
    from terminus.collect.runner import run_episode
    from terminus.models.generate import EpisodeTokens

    def rollout(prompts: list, trainer) -> dict:
        from trl.models.utils import unwrap_model_for_generation

        tokenizer = trainer.processing_class
        step = trainer.state.global_step
        episodes = [
            partial(
                run_episode,
                tasks[prompt[-1]["task_id"]],
                tasks_file,
                backend=script_args.sandbox,
                max_turns=script_args.max_turns,
                trajectory_id=f"{prompt[-1]['task_id']}@{step}#{i}",
            )
            for i, prompt in enumerate(prompts)
        ]
        # vLLM holds its own copy of the weights (synced by TRL); only transformers generation needs the model itself.
        unwrap = (
            contextlib.nullcontext(None)
            if trainer.args.use_vllm
            else unwrap_model_for_generation(trainer.model_wrapped, trainer.accelerator)
        )
        budget = trainer.args.max_completion_length
        with unwrap as model:
            generator = make_generator(trainer, model, tokenizer, script_args.max_new_tokens)
            # each episode is trained on the token ids it sampled, in the context it sampled them in
            tokens = partial(
                EpisodeTokens,
                tokenizer,
                max_new_tokens=script_args.max_new_tokens,
                max_completion_length=budget,
                max_model_len=generator.max_model_len,
                chat_kwargs=trainer.chat_template_kwargs,
            )
            run = run_lockstep(episodes, generator, name="grpo-policy", tokens=tokens)
        out = {
            "prompt_ids": [],
            "completion_ids": [],
            "logprobs": [] if trainer.args.use_vllm else None,
            "env_mask": [],
            "trajectory": [],
        }
        stats = {"turns": [], "timeouts": [], "format_errors": [], "final_answer": [], "truncated": []}
        stats |= {"completion_tokens": [], "loss_mask_tokens": [], "prompt_overflow": []}
        for traj, policy in zip(run.trajectories, run.policies, strict=True):
            record = traj.to_dict()
            sample = policy.tokens.sample(budget)
            replies = sum(1 for m in record["messages"] if m["role"] == "assistant")
            if replies and not any(sample["env_mask"]):
                raise TemplateError(
                    f"episode {traj.id}: none of the tokens of its {replies} replies carries loss "
                    f"(chat template: {describe(tokenizer)}); GRPO would train on nothing"
                )
            for key in ("prompt_ids", "completion_ids", "env_mask"):
                out[key].append(sample[key])
            if out["logprobs"] is not None:
                out["logprobs"].append(sample["logprobs"])
            out["trajectory"].append(record)
            stats["truncated"].append(float(sample["truncated"]))
            stats["completion_tokens"].append(len(sample["completion_ids"]))
            stats["loss_mask_tokens"].append(sum(sample["env_mask"]))
            stats["prompt_overflow"].append(float("PromptTooLong" in (traj.error or "")))
            stats["turns"].append(len(traj.turns))
            stats["timeouts"].append(sum(t.timed_out for t in traj.turns))
            stats["format_errors"].append(traj.format_errors)
            stats["final_answer"].append(float(traj.termination == "final_answer"))
        generated = sum(len(g.get("token_ids") or []) for p in run.policies for g in p.generated)
        stats["generation_s"] = [run.generation_s]
        stats["generated_tokens_per_s"] = [generated / max(run.generation_s, 1e-9)]
        stats["batch_size"] = [statistics.fmean(run.batch_sizes or [0])]
        mode = "train" if trainer.model.training else "eval"
        for key, values in stats.items():
            trainer._metrics[mode][f"episode/{key}"].append(statistics.fmean(values))
        return out

    return rollout


def build_dataset(tasks: list):
    """One row per task: the prompt carries the task id (a key the chat template ignores) for the rollout."""
    from datasets import Dataset

    rows = [{"prompt": [{"role": "user", "content": t.query, "task_id": t.id}], "task_id": t.id} for t in tasks]
    return Dataset.from_list(rows)


def main(script_args: GRPOScriptArguments, training_args, model_args, reward_funcs: list | None = None) -> dict:
    """Train; `reward_funcs` replaces the Scorer (scripts/paper_path_check.py: random weights state no facts)."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from trl import get_peft_config

    from terminus.config import load_config
    from terminus.determinism import deterministic_torch
    from terminus.io import read_jsonl
    from terminus.judge.scorer import Scorer, ScorerConfig
    from terminus.judge.setup import judge_from_config
    from terminus.tasks.record import load_tasks

    deterministic_torch(training_args.seed)
    tasks_file = Path(resolve(script_args.tasks_file))
    if script_args.dry_run:
        return dry_run_report(training_args, model_args, ("num_generations", "max_completion_length", "use_vllm"))
    tasks = [t for t in load_tasks(tasks_file) if t.split in script_args.splits]
    if not tasks:
        raise ValueError(f"{tasks_file} has no tasks in the splits {script_args.splits}")
    if script_args.max_tasks:
        import random

        sample = random.Random(training_args.seed).sample(tasks, min(script_args.max_tasks, len(tasks)))
        tasks = sorted(sample, key=lambda t: t.id)
    task_map = {t.id: t for t in tasks}
    experiment = load_config(resolve(script_args.experiment_config))
    script_args.sandbox = script_args.sandbox or experiment.get("sandbox")
    if experiment.get("sandbox_image"):
        from terminus.sandbox.docker import IMAGE_VAR

        os.environ[IMAGE_VAR] = experiment["sandbox_image"]
    references = {}
    if script_args.references:
        references = {r["task_id"]: r for r in read_jsonl(Path(resolve(script_args.references)))}
    if script_args.use_llm_judge and not (experiment["judge"].get("endpoint") or experiment["judge"].get("serve")):
        raise ValueError("--use_llm_judge needs judge.endpoint (or judge.serve) in the experiment config")
    # the same judge as `terminus judge` and `eval` build (prompts, concurrency, limits, a served model's cache key)
    stack = contextlib.ExitStack()
    judge = stack.enter_context(
        judge_from_config(
            experiment, Path(training_args.output_dir) / "judge-cache", no_llm=not script_args.use_llm_judge
        )
    )
    scorer = Scorer(
        tasks=task_map,
        judge=judge,
        config=ScorerConfig.load(experiment["judge"]["scorer"]),
        references=references,
        group=experiment["judge"]["group"],
    )
    model_id = resolve(model_args.model_name_or_path)
    tokenizer = install(AutoTokenizer.from_pretrained(model_id))  # the template SFT trained with
    dtype = model_args.dtype if model_args.dtype in (None, "auto") else getattr(torch, model_args.dtype)
    model = AutoModelForCausalLM.from_pretrained(model_id, dtype=dtype)
    trainer = grpo_trainer_class()(
        model=model,
        reward_funcs=reward_funcs or [scorer],
        args=training_args,
        train_dataset=build_dataset(tasks),
        processing_class=tokenizer,
        peft_config=get_peft_config(model_args),
        rollout_func=make_rollout(task_map, tasks_file, script_args),
        callbacks=[MetricsJsonl(training_args.output_dir)],
    )
    with stack:
        return train_and_save(trainer, tokenizer, training_args, model_args)


def refuse_several_processes(env: dict | None = None) -> None:
    """One training process only. Lockstep rollouts end when their episodes end, so with several ranks each calls
    generation a different number of times per step, and TRL's collectives (vLLM's gather, the weight sync) wait
    forever for the ranks that are done. Checked before TRL's parser, which would join the process group first."""
    world = int((env if env is not None else os.environ).get("WORLD_SIZE") or 1)
    if world > 1:
        raise ValueError(
            f"terminus grpo runs as one training process, not {world} (WORLD_SIZE): its lockstep rollouts call "
            "generation a different number of times on each rank and TRL's collectives deadlock; run it without "
            "accelerate launch or torchrun, on one GPU"
        )


def parse(argv: list[str]):
    from trl import GRPOConfig, ModelConfig

    refuse_several_processes()
    return parse_recipe((GRPOScriptArguments, GRPOConfig, ModelConfig), argv)


if __name__ == "__main__":
    main(*parse(sys.argv[1:]))
