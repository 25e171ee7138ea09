"""`terminus grpo --recipe configs/grpo/<recipe>.yaml [--key value ...]`: TRL's GRPOTrainer where every rollout
is a real subagent episode in a sandbox.

The rollout (TRL's `rollout_func`) runs the batch's episodes in lockstep (`terminus.collect.lockstep`): our own
loop, prompts and limits (`ExecutionSubagent`, exactly as at inference), the commands of all episodes concurrently in
their own sandboxes, and at every turn one batched generation for all live episodes, by TRL's vLLM engine when the
recipe sets `use_vllm` (weights synced by TRL, a LoRA merged out of place: `colocate`) and by batched transformers
generation otherwise. The task's query is forwarded as is, isolated from any main agent. Each episode is kept as
the token sequence it was generated as (`models.generate.EpisodeTokens`): the prompt is the system and user turns,
the completion everything after, ending on the last sampled `<|im_end|>` of a finished episode (so TRL counts it
terminated; a cut one stays truncated), and `env_mask` marks the token ids the model sampled, exactly as sampled, so
that tool output and injected messages carry no loss. The reward is the judge's Scorer.
"""

from __future__ import annotations

import contextlib
import logging
import os
import random
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path

from terminus.agent.template import install
from terminus.collect.provenance import file_sha256
from terminus.config import ConfigError, resolve_model
from terminus.determinism import deterministic_torch
from terminus.io import read_jsonl, write_text_atomic
from terminus.judge.setup import judge_cache_dir, scorer_from_config
from terminus.runspec import RunSpec, load_run
from terminus.settings import MAX_NEW_TOKENS
from terminus.tasks.record import load_tasks
from terminus.train import TrainingInputError, infra, trim
from terminus.train.before_after import Measure
from terminus.train.colocate import check_kv_plan, install_exact_sync, kv_plan
from terminus.train.rollout import make_rollout
from terminus.train.run import MetricsJsonl, dry_run_report, parse_recipe, run_inputs, train_and_save

log = logging.getLogger(__name__)


@dataclass
class GRPOScriptArguments:
    tasks_file: str = field(metadata={"help": "Validated task file; the prompts are its tasks."})
    max_turns: int = field(
        metadata={"help": "Turn limit per rollout (each recipe sets it: as at inference or fewer)."}
    )
    splits: list[str] = field(default_factory=lambda: ["train"], metadata={"help": "Splits to train on."})
    max_new_tokens: int = field(default=MAX_NEW_TOKENS, metadata={"help": "Tokens per assistant turn."})
    sandbox: str | None = field(default=None, metadata={"help": "Sandbox backend (default: the experiment config's)."})
    pull: str | None = field(
        default=None, metadata={"help": "When docker pulls an image: missing, always, never (default: sandbox_pull)."}
    )
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
    spread_candidates: int = field(
        default=0,
        metadata={
            "help": "Choose the training tasks for spread: draw this many of the splits' tasks (seeded), sample each "
            "spread_samples times with the starting policy, and train on the max_tasks whose rewards differ most "
            "(a group whose rollouts all score alike gives no gradient). 0: a seeded draw of max_tasks."
        },
    )
    spread_samples: int = field(default=4, metadata={"help": "Samples per candidate task for spread_candidates."})
    before_after_samples: int = field(
        default=0,
        metadata={
            "help": "Score the training tasks with this many samples each (the recipe's temperature) before and "
            "after GRPO, and write the paired difference with its 95%% interval to <output_dir>/before_after.json."
        },
    )
    measure_split: str | None = field(
        default=None,
        metadata={
            "help": "Measure before and after on held-out tasks of this split (a seeded draw of measure_tasks) "
            "rather than on the training tasks: what the policy learned that carries to tasks it never trained on."
        },
    )
    measure_tasks: int = field(default=16, metadata={"help": "Held-out tasks measured (with measure_split)."})
    shuffle_rewards: bool = field(
        default=False,
        metadata={
            "help": "The negative control: permute each group's rewards among its rollouts (seeded) before the "
            "advantages. Same rewards, same steps, no link between a rollout and its reward: no rise may follow."
        },
    )
    max_infra_failed_frac: float = field(
        default=0.2,
        metadata={"help": "Stop when this share of the episodes failed for want of a sandbox, a setup or an endpoint "
                  "(judge included) over the last failure_window steps (they are kept out of the loss)."},
    )  # fmt: skip
    max_unparseable_frac: float = field(
        default=0.2, metadata={"help": "Stop when this share of the judge's replies was unparseable (same window)."}
    )
    max_fallback_frac: float = field(
        default=0.2,
        metadata={"help": "Stop when this share of the rewards fell back to the fact checker alone (same window)."},
    )
    failure_window: int = field(default=5, metadata={"help": "Steps the failure shares are averaged over."})
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
    """TRL's GRPOTrainer, plus the spread of the importance-sampling ratio in the metrics and an exact weight sync
    of a LoRA to vLLM (`train.colocate`)."""
    from trl import GRPOTrainer

    class TerminusGRPOTrainer(GRPOTrainer):
        guard: infra.InfraGuard | None = None

        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            if self.use_vllm:  # a LoRA reaches vLLM merged out of place, the base never written (`train.colocate`)
                install_exact_sync(self.vllm_generation)

        # TRL private: the one method both the old-log-prob (and reference) forward and the loss forward go through,
        # and the narrowest place that sees each forward's batch; no public hook does (`train.trim`)
        def _get_per_token_logps_and_entropies(
            self, model, input_ids, attention_mask, logits_to_keep, batch_size=None, **kwargs
        ):
            forward = super()._get_per_token_logps_and_entropies
            return trim.per_token_logps_trimmed(
                forward, model, input_ids, attention_mask, logits_to_keep, batch_size, **kwargs
            )

        def _mean_over_ranks(self, values: list[float]) -> list[float]:
            if self.accelerator.num_processes == 1:
                return values
            import torch

            mean = self.accelerator.reduce(torch.tensor(values, device=self.accelerator.device), reduction="mean")
            return mean.tolist()

        # TRL private: no public hook sees the scored batch before the loss (callbacks get no batch, rollout_func
        # and reward functions run before the advantages and masks exist), and infra-failed episodes leave it here
        def _generate_and_score_completions(self, inputs):
            output = super()._generate_and_score_completions(inputs)
            mode = "train" if self.model.training else "eval"
            if self.guard is not None:  # infra-failed episodes out of the loss; the step's shares logged, checked
                infra.mask_dropped(output, self.guard.dropped(), self.accelerator)
                # TRL private `_metrics`: no public way to add a metric to the step's averaged log (`log` reads it)
                self.guard.finish(self._metrics[mode], self.state.global_step, self._mean_over_ranks)
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
                for key, value in spread.items():  # TRL private `_metrics`, as above
                    self._metrics[mode][f"sampling/importance_sampling_ratio/{key}"].append(value)
            return output

    return TerminusGRPOTrainer


def thresholds(script_args: GRPOScriptArguments) -> dict[str, float]:
    return {
        "rollout/infra_failed_frac": script_args.max_infra_failed_frac,
        "judge/unparseable_frac": script_args.max_unparseable_frac,
        "judge/fallback_frac": script_args.max_fallback_frac,
    }


def check_turn_limit(max_turns: int, run: RunSpec) -> None:
    """The turn limit's one home is the experiment config (`collect.max_turns`, the limit at inference). A recipe's
    `max_turns` may be fewer (the tiny recipes roll out 4: the model rarely needs more and CPU time is short), never
    more: a policy trained on longer episodes than it is ever given would learn turns it cannot use. Said naming
    both, never overridden in silence."""
    limit = run.cfg.collect.max_turns
    if max_turns > limit:
        raise ConfigError(
            f"the GRPO recipe's max_turns {max_turns} is above the experiment config's collect.max_turns {limit} "
            f"({run.config.get('_path')}): set the recipe's to {limit} or fewer, or raise the config's"
        )


class ShuffledReward:
    """A reward function whose scores are permuted within each group of `group` consecutive rollouts (TRL repeats
    each prompt `num_generations` times in a row); episodes without a reward (None: infra-failed) keep their place.
    The group's mean and spread are unchanged, so each step's loss has the same scale as the real reward's, but
    which rollout is paid is chance: the control that a rise comes from the reward and not from sampling itself."""

    def __init__(self, inner, group: int, seed: int) -> None:
        self.inner, self.group, self.rng = inner, group, random.Random(f"shuffle/{seed}")
        self.__name__ = getattr(inner, "__name__", "reward")

    def __call__(self, *args, **kwargs) -> list[float | None]:
        rewards = list(self.inner(*args, **kwargs))
        for start in range(0, len(rewards), self.group):
            places = [i for i in range(start, min(start + self.group, len(rewards))) if rewards[i] is not None]
            values = [rewards[i] for i in places]
            self.rng.shuffle(values)
            for i, value in zip(places, values, strict=True):
                rewards[i] = value
        return rewards


def held_out_tasks(tasks_file: Path, split: str, count: int, seed: int, training: dict) -> dict:
    """A seeded draw of `count` tasks of `split` (none of them a training task) for the before/after measure."""
    pool = [t for t in load_tasks(tasks_file) if t.split == split and t.id not in training]
    if len(pool) < 2:
        raise TrainingInputError(f"{tasks_file} has {len(pool)} {split} tasks to measure on; 2 at least")
    draw = random.Random(f"measure/{seed}").sample(pool, min(count, len(pool)))
    return {t.id: t for t in sorted(draw, key=lambda t: t.id)}


def build_dataset(tasks: list):
    """One row per task: the prompt carries the task id (a key the chat template ignores) for the rollout."""
    from datasets import Dataset

    rows = [{"prompt": [{"role": "user", "content": t.query, "task_id": t.id}], "task_id": t.id} for t in tasks]
    return Dataset.from_list(rows)


def main(script_args: GRPOScriptArguments, training_args, model_args, reward_funcs: list | None = None,
         observe=None) -> dict:  # fmt: skip
    """Train; `reward_funcs` replaces the Scorer (scripts/paper_path_check.py: random weights state no facts;
    `terminus.train.easy_reward`), and `observe` sees each step's rollout samples (`make_rollout`)."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from trl import get_peft_config

    deterministic_torch(training_args.seed)
    tasks_file = Path(resolve_model(script_args.tasks_file))
    if script_args.dry_run:
        return dry_run_report(training_args, model_args, ("num_generations", "max_completion_length", "use_vllm"))
    tasks = [t for t in load_tasks(tasks_file) if t.split in script_args.splits]
    if not tasks:
        raise TrainingInputError(f"{tasks_file} has no tasks in the splits {script_args.splits}")
    draw = script_args.spread_candidates or script_args.max_tasks
    if draw:
        sample = random.Random(training_args.seed).sample(tasks, min(draw, len(tasks)))
        tasks = sorted(sample, key=lambda t: t.id)
    task_map = {t.id: t for t in tasks}
    # the run's spec, built once here: the sandbox (--sandbox over the config's backend, the config's image) and the
    # judge go down to every rollout as arguments
    run = load_run(resolve_model(script_args.experiment_config), sandbox=script_args.sandbox, pull=script_args.pull)
    check_turn_limit(script_args.max_turns, run)
    write_text_atomic(Path(training_args.output_dir) / "config.yaml", run.resolved_yaml())  # what it trained under
    references = {}
    if script_args.references:
        references = {r["task_id"]: r for r in read_jsonl(Path(resolve_model(script_args.references)))}
    measured = {}  # the held-out tasks before/after measures on, which the Scorer must know too
    if script_args.measure_split:
        measured = held_out_tasks(tasks_file, script_args.measure_split, script_args.measure_tasks,
                                  training_args.seed, task_map)  # fmt: skip
    if script_args.use_llm_judge and not (run.judge.endpoint or run.judge.serve):
        raise TrainingInputError("--use_llm_judge needs judge.endpoint (or judge.serve) in the experiment config")
    # the same Scorer as `terminus judge` builds (prompts, concurrency, limits, judge.group) with the run's one cache
    stack = contextlib.ExitStack()
    scorer = stack.enter_context(
        scorer_from_config(
            run.cfg,
            task_map | measured,
            judge_cache_dir(run.config),
            no_llm=not script_args.use_llm_judge,
            references=references,
        )
    )
    model_id = resolve_model(model_args.model_name_or_path)
    tokenizer = install(AutoTokenizer.from_pretrained(model_id))  # the template SFT trained with
    dtype = model_args.dtype if model_args.dtype in (None, "auto") else getattr(torch, model_args.dtype)
    model = AutoModelForCausalLM.from_pretrained(model_id, dtype=dtype)
    if training_args.use_vllm and training_args.vllm_mode == "colocate" and torch.cuda.is_available():
        # vLLM's share against the step's episodes, said (or refused) before vLLM spends minutes loading
        gpu_bytes = torch.cuda.get_device_properties(training_args.device).total_memory  # this rank's GPU
        check_kv_plan(kv_plan(training_args, model, gpu_bytes))
    # infra-failed episodes out of the loss, counted, and the run stopped past the recipe's thresholds (train.infra)
    guard = infra.InfraGuard(training_args.num_generations, thresholds(script_args), script_args.failure_window)
    skips = infra.TaskSkips(training_args.output_dir)
    rewards = [infra.GuardedReward(f, guard) for f in reward_funcs or []]
    rewards = rewards or [infra.GuardedReward(scorer, guard, scorer)]
    if script_args.shuffle_rewards:
        rewards = [ShuffledReward(r, training_args.num_generations, training_args.seed) for r in rewards]
    trainer = grpo_trainer_class()(
        model=model,
        reward_funcs=rewards,
        args=training_args,
        train_dataset=build_dataset(tasks),
        processing_class=tokenizer,
        peft_config=get_peft_config(model_args),
        rollout_func=make_rollout(task_map, tasks_file, script_args, run.sandbox, observe, guard, skips),
        callbacks=[MetricsJsonl(training_args.output_dir)],
    )
    trainer.guard = guard
    with stack:
        seed = training_args.seed
        measure = Measure(trainer, model_id, task_map | measured, tasks_file, script_args, run.sandbox, scorer, seed)
        if script_args.spread_candidates:
            chosen = measure.select(script_args.max_tasks or len(task_map), among=sorted(task_map))
            trainer.train_dataset = build_dataset([task_map[t] for t in chosen])
        before = measure.before(sorted(measured) or [t["task_id"] for t in trainer.train_dataset])

        inputs = run_inputs(training_args, model_args, script=asdict(script_args), tasks=file_sha256(tasks_file),
                            experiment=file_sha256(resolve_model(script_args.experiment_config)))  # fmt: skip
        summary = train_and_save(trainer, tokenizer, training_args, model_args, inputs)
        if before is not None:
            summary["before_after"] = measure.after(before)
        return summary


def check_processes(script_args: GRPOScriptArguments, training_args, env: dict | None = None) -> None:
    """Several training processes (DDP, `accelerate launch`) only where no rank waits for another during a rollout.
    Lockstep rollouts end when their episodes end, so each rank calls generation a different number of times per
    step. With vLLM colocated at tensor parallelism 1 (or transformers generation) each rank calls its own engine
    with no collective, as TRL's own multi-turn loop does; in server mode (the main process gathers every rank's
    prompts) or with vllm_tensor_parallel_size > 1 (ranks gather within their group) TRL's collectives would wait
    forever for the ranks that are done. The task selection and the before/after measurement sample on each rank
    alone, so they would choose or measure differently per rank: refused too. Every rank raises alike."""
    world = int((env if env is not None else os.environ).get("WORLD_SIZE") or 1)
    if world <= 1:
        return
    why = None
    if training_args.use_vllm and training_args.vllm_mode != "colocate":
        why = f"vllm_mode {training_args.vllm_mode!r} gathers every rank's prompts"
    elif training_args.use_vllm and training_args.vllm_tensor_parallel_size > 1:
        why = f"vllm_tensor_parallel_size {training_args.vllm_tensor_parallel_size} gathers prompts across ranks"
    elif script_args.spread_candidates or script_args.before_after_samples:
        why = "spread_candidates and before_after_samples sample on each rank alone"
    if why:
        raise TrainingInputError(
            f"terminus grpo cannot run as {world} processes (WORLD_SIZE): {why}, and lockstep rollouts call "
            "generation a different number of times on each rank, so TRL's collectives deadlock; use vllm_mode "
            "colocate with tensor parallelism 1 (and neither option), or one process"
        )


def parse(argv: list[str]):
    from trl import GRPOConfig, ModelConfig

    script_args, training_args, model_args = parse_recipe((GRPOScriptArguments, GRPOConfig, ModelConfig), argv)
    check_processes(script_args, training_args)
    return script_args, training_args, model_args


if __name__ == "__main__":
    main(*parse(sys.argv[1:]))
