"""What SFT and GRPO runs share, apart from what they train: the metrics log that survives a resubmitted job
(`MetricsJsonl`, `publish_metrics`), the checkpoint to resume from when it was made from the same inputs
(`run_inputs`, `resume_point`), training and saving the final model (`train_and_save`), the recipe parser
(`parse_recipe`) and the dry run (`dry_run_report`)."""

from __future__ import annotations

import json
import logging
from dataclasses import asdict
from pathlib import Path

from transformers import TrainerCallback

from terminus.collect.provenance import model_stamp
from terminus.config import resolve, resolve_model
from terminus.io import append_jsonl, read_jsonl, write_json_atomic, write_jsonl_atomic
from terminus.train import TrainingInputError
from terminus.train.infra import SKIPPED_FILE

log = logging.getLogger(__name__)

LIVE_LOG = "train_log.jsonl"
METRICS = "metrics.jsonl"


class MetricsJsonl(TrainerCallback):
    """Every log line of the trainer, appended as it comes to <output_dir>/train_log.jsonl, the log of the whole run
    across the segments a resumed run is made of; `train_and_save` copies it to <output_dir>/metrics.jsonl (what the
    notebooks plot) when training ends.

    The live log is never a workflow output: Snakemake deletes a failed job's declared outputs, so a run cut off at
    its slurm time limit and resubmitted would otherwise start its curve again at the checkpoint it resumes from.
    A segment that resumes from checkpoint N drops the rows past step N (the steps it redoes), so no step is lost or
    logged twice."""

    def __init__(self, output_dir: Path | str) -> None:
        self.path = Path(output_dir) / LIVE_LOG

    def on_train_begin(self, args, state, control, **kwargs):
        if not state.is_world_process_zero or not self.path.is_file():
            return
        # a segment's closing row (train_runtime, ...) is written again by the segment that finishes the run
        rows = read_jsonl(self.path, torn_tail=True)  # a kill may have cut its last line
        kept = [r for r in rows if r.get("step", 0) <= state.global_step and "train_runtime" not in r]
        write_jsonl_atomic(self.path, kept)
        if kept:
            log.info("%s: the curve continues after step %d (%d rows kept)", self.path, state.global_step, len(kept))

    def on_log(self, args, state, control, logs=None, **kwargs):
        if not state.is_world_process_zero or not logs:
            return
        append_jsonl(self.path, {"step": state.global_step, "epoch": state.epoch, **logs})


def publish_metrics(output_dir: Path | str) -> Path:
    """<output_dir>/metrics.jsonl, the whole run's log, written atomically from the live log."""
    output_dir = Path(output_dir)
    live, out = output_dir / LIVE_LOG, output_dir / METRICS
    write_jsonl_atomic(out, read_jsonl(live, torn_tail=True) if live.is_file() else [])
    return out


def last_checkpoint(output_dir: str) -> str | None:
    from transformers.trainer_utils import get_last_checkpoint

    return get_last_checkpoint(output_dir) if Path(output_dir).is_dir() else None


RESUME_INPUTS = "resume_inputs.json"
# settings that say where and how often a run reports or saves, not what it trains: a resubmitted job may change them
RUN_MANAGEMENT = {"output_dir", "logging_dir", "run_name", "report_to", "save_strategy", "save_steps",
                  "save_total_limit", "logging_steps", "logging_strategy", "logging_first_step", "log_completions",
                  "overwrite_output_dir", "disable_tqdm", "push_to_hub", "hub_model_id", "hub_strategy", "hub_token",
                  "dataloader_num_workers", "resume_from_checkpoint"}  # fmt: skip


def run_inputs(training_args, model_args, **extra) -> dict:
    """What a run's checkpoints depend on: the recipe (TRL's and the model's arguments, run management aside), the
    starting model's files, and the caller's data (`extra`: stamps of the dataset or task file)."""

    recipe = {k: v for k, v in training_args.to_dict().items() if k not in RUN_MANAGEMENT and not k.startswith("_")}
    model = {k: v for k, v in asdict(model_args).items() if k not in RUN_MANAGEMENT}
    start = model_stamp(resolve_model(model_args.model_name_or_path))
    inputs = {"recipe": recipe, "model_args": model, "model": start, **extra}
    return json.loads(json.dumps(inputs, sort_keys=True, default=str))


def resume_point(output_dir: str, inputs: dict) -> str | None:
    """The checkpoint to resume from: the last one in output_dir when it was made from these inputs (a resubmitted
    job). Checkpoints of other inputs (the recipe edited, the starting model or data made again) are not resumed
    but moved, with their log, to output_dir/superseded/<n>/, so that the new run starts fresh and nothing already
    written is lost."""
    out = Path(output_dir)
    stamp = out / RESUME_INPUTS
    resume = last_checkpoint(output_dir)
    previous = json.loads(stamp.read_text()) if stamp.is_file() else None
    logged = previous is not None and (out / LIVE_LOG).is_file()  # a run of known inputs that saved no checkpoint
    if (resume or logged) and previous != inputs:
        old = {} if previous is None else _flatten(previous)
        new = _flatten(inputs)
        changed = sorted(k for k in old.keys() | new.keys() if old.get(k) != new.get(k)) if previous else ["unknown"]
        superseded = out / "superseded"
        superseded.mkdir(exist_ok=True)
        dest = superseded / str(sum(1 for _ in superseded.iterdir()))
        dest.mkdir()
        names = (LIVE_LOG, RESUME_INPUTS, SKIPPED_FILE)  # the tasks it skipped were skipped under those inputs
        moved = [p for p in out.iterdir() if p.name.startswith("checkpoint-") or p.name in names]
        for path in moved:
            path.rename(dest / path.name)
        log.warning("%s holds checkpoints made from other inputs (changed: %s): moved to %s; training afresh",
                    output_dir, ", ".join(changed[:8]), dest)  # fmt: skip
        resume = None
    out.mkdir(parents=True, exist_ok=True)

    write_json_atomic(stamp, inputs)
    return resume


def _flatten(tree: dict, prefix: str = "") -> dict:
    flat = {}
    for key, value in tree.items():
        if isinstance(value, dict):
            flat |= _flatten(value, f"{prefix}{key}.")
        else:
            flat[f"{prefix}{key}"] = json.dumps(value, sort_keys=True)
    return flat


def check_model_resolves(model_id: str) -> dict:
    """Model class and tokenizer for a hub id or folder, without downloading anything."""
    from transformers import AutoConfig
    from transformers.models.auto.modeling_auto import MODEL_FOR_CAUSAL_LM_MAPPING_NAMES

    local = Path(resolve_model(model_id))
    if model_id.startswith(("results/", "/", "./")) and not local.exists():
        return {"model": model_id, "source": "made by an earlier stage (not there yet)", "class": None}
    if local.is_dir():
        config = AutoConfig.from_pretrained(local)
        return {
            "model": model_id,
            "source": "local folder",
            "class": MODEL_FOR_CAUSAL_LM_MAPPING_NAMES[config.model_type],
        }
    try:
        config = AutoConfig.from_pretrained(model_id, local_files_only=True)
        source = "hub cache"
        model_type = config.model_type
    except OSError:
        # Not cached here (no hub access): resolve the architecture from the model family the id names.
        family = model_id.split("/")[-1].split("-")[0].lower()
        if family not in MODEL_FOR_CAUSAL_LM_MAPPING_NAMES:
            raise TrainingInputError(f"cannot resolve a causal-LM class for {model_id!r} offline") from None
        source, model_type = "not cached (would download on the cluster)", family
    return {"model": model_id, "source": source, "class": MODEL_FOR_CAUSAL_LM_MAPPING_NAMES[model_type]}


def dry_run_report(training_args, model_args, keys: tuple[str, ...]) -> dict:
    """What a recipe would train (the model resolved without downloading, the output folder, the recipe's `keys`),
    printed and returned instead of training."""
    info = check_model_resolves(model_args.model_name_or_path)
    info.update(output_dir=training_args.output_dir, peft=bool(model_args.use_peft))
    info.update({key: getattr(training_args, key) for key in keys})
    print(json.dumps(info, indent=1))
    return info


def train_and_save(trainer, tokenizer, training_args, model_args, inputs: dict) -> dict:
    """Train (resuming from the last checkpoint in output_dir when it was made from these `inputs`, `run_inputs`),
    save `final/`, write train_summary.json."""
    # rank 0 alone moves superseded checkpoints aside and writes the run's inputs; the others wait, then read the
    # same folder (under DDP every rank resumes from the same checkpoint)
    accelerator = trainer.accelerator
    if accelerator.is_main_process:
        resume_point(training_args.output_dir, inputs)
    accelerator.wait_for_everyone()
    resume = last_checkpoint(training_args.output_dir)
    if resume:
        log.info("resuming from %s", resume)
    result = trainer.train(resume_from_checkpoint=resume)
    final = Path(training_args.output_dir) / "final"
    trainer.save_model(str(final))
    tokenizer.save_pretrained(str(final))
    if trainer.is_world_process_zero():
        publish_metrics(training_args.output_dir)
    summary = {
        "train_loss": result.training_loss,
        "steps": trainer.state.global_step,
        "model": str(final),
        "base_model": model_args.model_name_or_path,
        "peft": bool(model_args.use_peft),
    }
    if trainer.is_world_process_zero():
        (Path(training_args.output_dir) / "train_summary.json").write_text(json.dumps(summary, indent=1) + "\n")
    return summary


def parse_recipe(dataclasses: tuple, argv: list[str]):
    """A YAML recipe (`--config`) with flag overrides, TRL-parser style; output_dir from the working folder."""
    from trl import TrlParser

    if "--dry_run" in argv:  # validate a GPU recipe on a CPU machine: TrainingArguments refuses bf16 otherwise
        import torch

        if not torch.cuda.is_available():
            argv = [*argv, "--use_cpu", "true"]
    try:
        script_args, training_args, model_args = TrlParser(dataclasses).parse_args_and_config(argv)
    except ValueError as err:  # TRL's parser: a flag it does not know, or a value of the wrong kind
        raise TrainingInputError(str(err)) from None
    # recipes name folders relative to the project they run in: never to where the package is installed (a second
    # checkout sharing the venv would train into, and resume from, the first one's results/)
    training_args.output_dir = str(resolve(training_args.output_dir))
    return script_args, training_args, model_args
