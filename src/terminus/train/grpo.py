"""`terminus grpo --config configs/grpo/<recipe>.yaml [--key value ...]`: TRL's GRPOTrainer where every rollout
is a real subagent episode in a sandbox.

The rollout (TRL's `rollout_func`) runs our own loop, prompts and limits (`ExecutionSubagent`, exactly as at
inference) with a policy that generates with the model being trained; the task's query is forwarded as is,
isolated from any main agent. The episode is then tokenised with the model's chat template: the prompt is the
system and user turns, the completion everything after, and `env_mask` marks the tokens the model generated
(assistant turns) so that tool output and injected messages carry no loss. The reward is the judge's Scorer.
"""

from __future__ import annotations

import json
import logging
import statistics
import sys
from dataclasses import dataclass, field
from pathlib import Path

from terminus.agent.terminal import TERMINAL_TOOL
from terminus.train.sft import MetricsJsonl, check_model_resolves, parse_recipe, resolve, train_and_save

log = logging.getLogger(__name__)


@dataclass
class GRPOScriptArguments:
    tasks_file: str = field(metadata={"help": "Validated task file; the prompts are its tasks."})
    splits: list[str] = field(default_factory=lambda: ["train"], metadata={"help": "Splits to train on."})
    max_turns: int = field(default=10, metadata={"help": "Turn limit per rollout (as at inference)."})
    max_new_tokens: int = field(default=256, metadata={"help": "Tokens per assistant turn."})
    sandbox: str | None = field(default=None, metadata={"help": "Sandbox backend (default: bwrap where installed)."})
    experiment_config: str = field(default="configs/config.yaml", metadata={"help": "For the judge settings."})
    references: str | None = field(default=None, metadata={"help": "Expert trajectories, the judge's references."})
    use_llm_judge: bool = field(default=False, metadata={"help": "Add the LLM judge of the experiment config."})
    dry_run: bool = field(default=False, metadata={"help": "Parse and validate everything, train nothing."})


def episode_tokens(tokenizer, messages: list[dict], max_completion_length: int | None) -> dict:
    """prompt_ids (system + user + generation prompt), completion_ids (the rest), env_mask (1 = model tokens)."""
    tools = [TERMINAL_TOOL]
    prompt = tokenizer.apply_chat_template(
        messages[:2], tools=tools, add_generation_prompt=True, tokenize=True, return_dict=True
    )["input_ids"]
    full = tokenizer.apply_chat_template(
        messages, tools=tools, tokenize=True, return_dict=True, return_assistant_tokens_mask=True
    )
    ids, mask = list(full["input_ids"]), list(full["assistant_masks"])
    # Byte-level BPE may merge the generation prompt's last newline with the reply's first characters, so the
    # episode is split where the two tokenisations stop agreeing (at most a token or two before the boundary).
    k = 0
    while k < min(len(prompt), len(ids)) and ids[k] == prompt[k]:
        k += 1
    if k < len(prompt) - 2:
        raise ValueError("the chat template does not render the prompt as a prefix of the episode")
    prompt = ids[:k]
    completion, env_mask = ids[k:], mask[k:]
    if max_completion_length is not None:
        completion, env_mask = completion[:max_completion_length], env_mask[:max_completion_length]
    if not completion:  # an episode with nothing after the prompt still needs one token
        completion, env_mask = [tokenizer.eos_token_id], [0]
    return {"prompt_ids": list(prompt), "completion_ids": completion, "env_mask": env_mask}


def make_rollout(tasks: dict, tasks_file: Path, script_args: GRPOScriptArguments):
    from terminus.collect.runner import run_episode
    from terminus.models.local import TransformersPolicy

    def rollout(prompts: list, trainer) -> dict:
        from trl.models.utils import unwrap_model_for_generation

        out = {"prompt_ids": [], "completion_ids": [], "logprobs": None, "env_mask": [], "trajectory": []}
        stats = {"turns": [], "timeouts": [], "format_errors": [], "final_answer": []}
        tokenizer = trainer.processing_class
        with unwrap_model_for_generation(trainer.model_wrapped, trainer.accelerator) as model:
            policy = TransformersPolicy.from_objects(
                model, tokenizer, "grpo-policy", script_args.max_new_tokens, temperature=trainer.args.temperature
            )
            for prompt in prompts:
                task = tasks[prompt[-1]["task_id"]]
                traj = run_episode(
                    task,
                    tasks_file,
                    policy,
                    backend=script_args.sandbox,
                    max_turns=script_args.max_turns,
                    trajectory_id=f"{task.id}@{trainer.state.global_step}",
                )
                record = traj.to_dict()
                tokens = episode_tokens(tokenizer, record["messages"], trainer.args.max_completion_length)
                for key in ("prompt_ids", "completion_ids", "env_mask"):
                    out[key].append(tokens[key])
                out["trajectory"].append(record)
                stats["turns"].append(len(traj.turns))
                stats["timeouts"].append(sum(t.timed_out for t in traj.turns))
                stats["format_errors"].append(traj.format_errors)
                stats["final_answer"].append(float(traj.termination == "final_answer"))
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


def main(script_args: GRPOScriptArguments, training_args, model_args) -> dict:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from trl import GRPOTrainer, get_peft_config

    from terminus.config import load_config
    from terminus.judge.scorer import Scorer, ScorerConfig
    from terminus.tasks.record import load_tasks
    from terminus.train.data import read_jsonl

    tasks_file = Path(resolve(script_args.tasks_file))
    if script_args.dry_run:
        info = check_model_resolves(model_args.model_name_or_path)
        info.update(
            output_dir=training_args.output_dir,
            num_generations=training_args.num_generations,
            max_completion_length=training_args.max_completion_length,
            use_vllm=training_args.use_vllm,
            peft=bool(model_args.use_peft),
        )
        print(json.dumps(info, indent=1))
        return info
    tasks = [t for t in load_tasks(tasks_file) if t.split in script_args.splits]
    if not tasks:
        raise ValueError(f"{tasks_file} has no tasks in the splits {script_args.splits}")
    task_map = {t.id: t for t in tasks}
    experiment = load_config(resolve(script_args.experiment_config))
    references = {}
    if script_args.references:
        references = {r["task_id"]: r for r in read_jsonl(Path(resolve(script_args.references)))}
    judge = None
    if script_args.use_llm_judge:  # e.g. a frontier judge behind an endpoint on the cluster
        from terminus.judge.llm import LLMJudge
        from terminus.judge.rubric import load_rubric

        endpoint = experiment["judge"].get("endpoint") or {}
        if not endpoint:
            raise ValueError("--use_llm_judge needs judge.endpoint in the experiment config")
        judge = LLMJudge(
            load_rubric(experiment["judge"]["rubric"]),
            endpoint["model"],
            endpoint.get("base_url"),
            endpoint.get("api_key_env"),
            cache_dir=Path(training_args.output_dir) / "judge-cache",
        )
    scorer = Scorer(
        tasks=task_map,
        judge=judge,
        config=ScorerConfig.load(experiment["judge"]["scorer"]),
        references=references,
        group=experiment["judge"]["group"],
    )
    model_id = resolve(model_args.model_name_or_path)
    tokenizer = AutoTokenizer.from_pretrained(model_id)
    dtype = model_args.dtype if model_args.dtype in (None, "auto") else getattr(torch, model_args.dtype)
    model = AutoModelForCausalLM.from_pretrained(model_id, dtype=dtype)
    trainer = GRPOTrainer(
        model=model,
        reward_funcs=[scorer],
        args=training_args,
        train_dataset=build_dataset(tasks),
        processing_class=tokenizer,
        peft_config=get_peft_config(model_args),
        rollout_func=make_rollout(task_map, tasks_file, script_args),
        callbacks=[MetricsJsonl(Path(training_args.output_dir) / "metrics.jsonl")],
    )
    return train_and_save(trainer, tokenizer, training_args, model_args)


def parse(argv: list[str]):
    from trl import GRPOConfig, ModelConfig

    return parse_recipe((GRPOScriptArguments, GRPOConfig, ModelConfig), argv)


if __name__ == "__main__":
    main(*parse(sys.argv[1:]))
