"""GRPO's rollouts: each prompt's episode run to its end, in lockstep with the batch's others
(`terminus.collect.lockstep`), by the policy as it is now, and kept as the token ids it sampled (see
`terminus.train.grpo`); infra-failed episodes become placeholders that the reward and the loss leave out
(`terminus.train.infra`)."""

from __future__ import annotations

import contextlib
import statistics
from functools import partial
from pathlib import Path

from terminus.agent.template import TemplateError, describe
from terminus.collect.lockstep import run_lockstep
from terminus.collect.runner import run_episode
from terminus.models.generate import EpisodeTokens, TransformersGenerator, TRLVLLMGenerator
from terminus.sandbox.spec import SandboxSpec
from terminus.train import infra


def make_generator(trainer, model, tokenizer, max_new_tokens: int):
    """TRL's own vLLM engine when the recipe sets `use_vllm`, else batched transformers generation."""
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


def episode_calls(tasks: dict, tasks_file: Path, script_args, sandbox, task_ids: list[str], tag: str):
    """One episode per task id, as GRPO runs it: the task's query forwarded as is, the recipe's limits, in the
    run's sandbox (a `SandboxSpec`)."""
    return [
        partial(
            run_episode,
            tasks[task_id],
            tasks_file,
            sandbox=sandbox,
            max_turns=script_args.max_turns,
            trajectory_id=f"{task_id}@{tag}#{i}",
            fail_alone=True,  # a task that does not start fails its episode, not the batch (`train.infra`)
        )
        for i, task_id in enumerate(task_ids)
    ]


def run_policy(trainer, episodes: list, script_args, name: str):
    """The episodes in lockstep with the policy as it is now: TRL's vLLM engine (weights synced to this step, as
    TRL's own rollout path syncs them) or batched transformers generation of the model being trained; each
    episode kept as the token ids it sampled (`EpisodeTokens`)."""
    from trl.models.utils import unwrap_model_for_generation

    # TRL private `_last_loaded_step`: TRL's own marker of the step whose weights vLLM holds, which it syncs by
    # before its rollout_func; no public API for it. Setting it keeps TRL from syncing the same step again after a
    # measurement (`before_after.Measure`) synced it here.
    if trainer.args.use_vllm and trainer.state.global_step != getattr(trainer, "_last_loaded_step", None):
        trainer.vllm_generation.sync_weights()
        trainer._last_loaded_step = trainer.state.global_step
    # vLLM holds its own copy of the weights (synced by TRL); only transformers generation needs the model itself.
    unwrap = (
        contextlib.nullcontext(None)
        if trainer.args.use_vllm
        else unwrap_model_for_generation(trainer.model_wrapped, trainer.accelerator)
    )
    with unwrap as model:
        generator = make_generator(trainer, model, trainer.processing_class, script_args.max_new_tokens)
        # each episode is trained on the token ids it sampled, in the context it sampled them in
        tokens = partial(
            EpisodeTokens,
            trainer.processing_class,
            max_new_tokens=script_args.max_new_tokens,
            max_completion_length=trainer.args.max_completion_length,
            max_model_len=generator.max_model_len,
            chat_kwargs=trainer.chat_template_kwargs,
        )
        return run_lockstep(episodes, generator, name=name, tokens=tokens)


def make_rollout(
    tasks: dict, tasks_file: Path, script_args, sandbox: SandboxSpec, observe=None,
    guard: infra.InfraGuard | None = None, skips: infra.TaskSkips | None = None,
):  # fmt: skip
    """TRL's rollout function: each prompt's episode, run to its end in the run's sandbox, as one sample with its
    loss mask. `observe`, when given, is called with each step's samples (the easy-reward check measures the step on
    them). With `guard` and `skips` (`train.infra`), an infra-failed episode, or one of a task skipped after failing
    to start, becomes a placeholder sample that the reward and the loss leave out."""

    def rollout(prompts: list, trainer) -> dict:
        tokenizer = trainer.processing_class
        step = trainer.state.global_step
        ids = [prompt[-1]["task_id"] for prompt in prompts]
        skipped = skips.skipped if skips is not None else {}
        if skipped and set(tasks) <= set(skipped):
            raise infra.InfraFailureError(f"every training task failed to start (listed in {skips.path})")
        run_ids = [i for i, task_id in enumerate(ids) if task_id not in skipped]
        episodes = episode_calls(tasks, tasks_file, script_args, sandbox, [ids[i] for i in run_ids], str(step))
        budget = trainer.args.max_completion_length
        run = run_policy(trainer, episodes, script_args, "grpo-policy")
        ran = dict(zip(run_ids, zip(run.trajectories, run.policies, strict=True), strict=True))
        out = {
            "prompt_ids": [],
            "completion_ids": [],
            "logprobs": [] if trainer.args.use_vllm else None,
            "env_mask": [],
            "trajectory": [],
        }
        failures: list[str | None] = []
        stats = {"turns": [], "timeouts": [], "format_errors": [], "final_answer": [], "truncated": []}
        stats |= {"completion_tokens": [], "loss_mask_tokens": [], "prompt_overflow": []}
        for index, task_id in enumerate(ids):
            traj, policy = ran.get(index, (None, None))
            record = traj.to_dict() if traj is not None else {"id": f"{task_id}@{step}", "task_id": task_id}
            failure = f"skipped: {skipped[task_id]}" if traj is None else None
            if traj is not None and guard is not None:
                failure = infra.infra_failure(record)
                skips.saw(task_id, record)
            failures.append(failure)
            if failure is not None:  # one pad token, no loss: no forward pass is spent on what did not run
                sample = {"prompt_ids": [tokenizer.pad_token_id], "completion_ids": [tokenizer.pad_token_id],
                          "env_mask": [0], "logprobs": [None]}  # fmt: skip
            else:
                sample = policy.tokens.sample(budget)
            replies = sum(1 for m in record.get("messages", []) if m["role"] == "assistant")
            if failure is None and replies and not any(sample["env_mask"]):
                raise TemplateError(
                    f"episode {traj.id}: none of the tokens of its {replies} replies carries loss "
                    f"(chat template: {describe(tokenizer)}); GRPO would train on nothing"
                )
            for key in ("prompt_ids", "completion_ids", "env_mask"):
                out[key].append(sample[key])
            if out["logprobs"] is not None:
                out["logprobs"].append(sample["logprobs"])
            out["trajectory"].append(record)
            if failure is not None:  # the episode statistics are the policy's episodes'
                continue
            stats["truncated"].append(float(sample["truncated"]))
            stats["completion_tokens"].append(len(sample["completion_ids"]))
            stats["loss_mask_tokens"].append(sum(sample["env_mask"]))
            stats["prompt_overflow"].append(float("PromptTooLong" in (traj.error or "")))
            stats["turns"].append(len(traj.turns))
            stats["timeouts"].append(sum(t.timed_out for t in traj.turns))
            stats["format_errors"].append(traj.format_errors)
            stats["final_answer"].append(float(traj.termination == "final_answer"))
        if guard is not None:
            guard.begin(failures)
        generated = sum(len(g.get("token_ids") or []) for p in run.policies for g in p.generated)
        stats["generation_s"] = [run.generation_s]
        stats["generated_tokens_per_s"] = [generated / max(run.generation_s, 1e-9)]
        stats["batch_size"] = [statistics.fmean(run.batch_sizes or [0])]
        mode = "train" if trainer.model.training else "eval"
        for key, values in stats.items():
            if values:  # a step whose every episode failed has no episode statistics
                # TRL private `_metrics`: no public way to add a metric to the step's averaged log
                trainer._metrics[mode][f"episode/{key}"].append(statistics.fmean(values))
        return out

    def observed(prompts: list, trainer) -> dict:
        out = rollout(prompts, trainer)
        if observe is not None:
            observe(out)
        return out

    return observed
