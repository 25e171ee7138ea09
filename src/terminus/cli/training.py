"""`sft`, `grpo` (TRL recipes with flag overrides), `export`, `training-summary`."""

from __future__ import annotations

import importlib
import json
import logging
from pathlib import Path

import typer

from terminus.cli import _run, app
from terminus.cli.support import TURN_LIMIT, pull_option, set_option, write_resolved
from terminus.config import load_yaml, stamp
from terminus.determinism import machine
from terminus.errors import TerminusError
from terminus.runspec import LOCAL_POLICIES
from terminus.sandbox import Backend
from terminus.sandbox.pull import Pull
from terminus.train.evaluate import training_summary
from terminus.train.export import export

logger = logging.getLogger(__name__)

PASS_THROUGH = {"allow_extra_args": True, "ignore_unknown_options": True, "help_option_names": []}


def _run_recipe(stage: str, trl_config: str, args: list[str]) -> None:
    """`terminus <stage> --recipe configs/<stage>/<recipe>.yaml [--key value ...]`: terminus.train.<stage>'s parse
    and main, the arguments passed through to TRL's parser (which takes `--key_name` and `--key-name` alike)."""
    if not args or args[0] in ("-h", "--help"):
        usage = f"terminus {stage} --recipe configs/{stage}/<recipe>.yaml [--key value ...]"
        typer.echo(f"usage: {usage}  (TRL {trl_config} keys, as --key_name or --key-name)")
        raise typer.Exit(0)
    argv = trl_argv(stage, args)
    module = importlib.import_module(f"terminus.train.{stage}")  # torch and TRL: only once the flags are sound
    module.main(*module.parse(argv))


def trl_argv(stage: str, args: list[str]) -> list[str]:
    """The arguments as TRL's parser takes them. Everywhere else `--config` names the experiment config, so the
    TRL recipe is `--recipe` here; TRL's parser reads it from its own `--config` (given as `--config FILE`, never
    `--config=FILE`). `--config` still works for these two commands, with a warning. Flags are TRL's field names:
    `--max-steps` is taken as `--max_steps`, so these commands spell flags like every other one."""
    out: list[str] = []
    rest = iter(args)
    for arg in rest:
        if not arg.startswith("--"):
            out.append(arg)
            continue
        flag, eq, value = arg.partition("=")
        flag = "--" + flag[2:].replace("-", "_")
        if flag not in ("--recipe", "--config"):
            out.append(flag + eq + value)
            continue
        if flag == "--config":
            logger.warning("terminus %s: --config is deprecated for the TRL recipe; use --recipe", stage)
        value = value if eq else next(rest, None)
        if not value or value.startswith("--"):
            raise TerminusError(f"{flag} needs a recipe file, e.g. --recipe configs/{stage}/tiny.yaml")
        if not Path(value).is_file():
            raise TerminusError(f"--recipe {value} does not exist (the recipes are configs/{stage}/*.yaml)")
        # read here as every project file is read (UTF-8, safe YAML, aliases bounded), so that a broken recipe is one
        # line before TRL's parser, which reads it again and would print a YAML traceback or walk an alias bomb
        if not isinstance(load_yaml(value, "--recipe"), dict):
            raise TerminusError(f"--recipe {value} is not a mapping of TRL keys to values")
        out += ["--config", value]
    return out


@app.command("sft", context_settings=PASS_THROUGH)
def sft_command(ctx: typer.Context) -> None:
    """SFT with TRL: `terminus sft --recipe configs/sft/tiny.yaml [--key value ...]` (flags override the recipe)."""
    _run_recipe("sft", "SFTConfig", ctx.args)


@app.command("grpo", context_settings=PASS_THROUGH)
def grpo_command(ctx: typer.Context) -> None:
    """GRPO with TRL, rollouts in sandboxes: `terminus grpo --recipe configs/grpo/tiny.yaml [--key value ...]`."""
    _run_recipe("grpo", "GRPOConfig", ctx.args)


@app.command("export")
def export_command(
    model: Path = typer.Option(..., help="Trained checkpoint folder (full model or LoRA adapter)."),
    out: Path = typer.Option(..., help="Export folder."),
    base: str = typer.Option(None, help="Base model of a LoRA adapter (default: the adapter's own record)."),
    counts: Path = typer.Option(None, help="counts.json of the SFT data, for the model card."),
    recipe: list[Path] = typer.Option([], help="Training recipes to put in the model card (repeatable)."),
    summary: Path = typer.Option(None, help="training/summary.json, for the model card."),
    no_vllm: bool = typer.Option(False, "--no-vllm", help="Skip the vLLM load check."),
) -> None:
    """Merge, save and verify: vLLM, loading the export, scores a fixed episode as the trained model does."""
    if not model.is_dir():
        raise TerminusError(f"--model {model} does not exist")
    if not any((model / name).is_file() for name in ("config.json", "adapter_config.json")):
        raise TerminusError(
            f"--model {model} holds no model (no config.json or adapter_config.json): give the folder a training "
            "run saved its model or adapter in"
        )
    check = export(model, out, base=base, counts=counts, recipes=recipe, summary=summary, check_vllm=not no_vllm)
    if check["match"] is False:
        raise TerminusError(
            f"vLLM loading {check['folder']} scores the check episode {check['max_abs_logprob_diff']} nats a token "
            f"away from the trained model (tolerance {check['tolerance']}, both float32 on {check['device']}): "
            "the export is wrong and was not published"
        )
    typer.echo(f"exported to {out}; vLLM scores it as the trained model: {check['match']}")


@app.command("training-summary")
def training_summary_command(
    tasks: Path = typer.Option(..., help="Validated task file (its test split is held out)."),
    base: str = typer.Option(..., help="Base model folder."),
    sft: str = typer.Option(..., help="SFT model folder."),
    grpo: str = typer.Option(..., help="GRPO model folder."),
    grpo_metrics: Path = typer.Option(..., help="GRPO's metrics.jsonl."),
    out: Path = typer.Option(..., help="summary.json to write."),
    config: Path = typer.Option(
        Path("configs/config.yaml"),
        help="Experiment config: the stamp, sandbox, sandbox_image, eval.concurrency, model.summary_* (each flag "
        "below overrides its key).",
    ),
    sets: list[str] = set_option(),
    max_turns: int = typer.Option(TURN_LIMIT, help="Turn limit, as at inference."),
    max_new_tokens: int = typer.Option(None, help="Tokens per turn. Default: model.summary_max_new_tokens."),
    concurrency: int = typer.Option(
        None, min=1, help="Episodes at once (batched together through each model). Default: the config's eval's."
    ),
    policy: str = typer.Option(
        None,
        help="How each model generates: transformers (in this process) or vllm (served, batched). Default: "
        "model.summary_policy.",
    ),
    sandbox: Backend = typer.Option(None, help="Sandbox backend (default: the config's `sandbox`)."),
    pull: Pull = pull_option(),
    train_tasks: int = typer.Option(
        None,
        min=0,
        help="Also run the SFT model on this many of its training tasks (sft.train_fact_recall); 0: none. Default: "
        "model.summary_train_tasks.",
    ),
) -> None:
    """Base vs SFT vs GRPO on held-out tasks (final-answer rate, fact recall) and GRPO's reward over steps."""

    run = _run(config, sandbox, sets, pull)
    summary = run.cfg.model
    policy = policy or summary.summary_policy
    if policy not in LOCAL_POLICIES:
        raise TerminusError(f"--policy {policy}: choose transformers or vllm")
    write_resolved(run, out)
    result = training_summary(
        tasks,
        {"base": base, "sft": sft, "grpo": grpo},
        grpo_metrics,
        out,
        stamp=stamp(run.config) | {"machine": machine()},  # the JSON stamp names the machine; CSV rows do not
        sandbox=run.sandbox,
        max_turns=max_turns,
        max_new_tokens=max_new_tokens or summary.summary_max_new_tokens,
        concurrency=concurrency or run.cfg.eval.concurrency,
        policy=policy,
        train_tasks=summary.summary_train_tasks if train_tasks is None else train_tasks,
    )
    typer.echo(
        json.dumps(
            {k: v for k, v in result.items() if k != "grpo"}
            | {"grpo": {k: v for k, v in result["grpo"].items() if k != "reward_curve"}},
            indent=1,
        )
    )
