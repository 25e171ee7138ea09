"""`tasks build`, `tasks validate`, `collect`, `sft-data`: the corpus, the teacher's rollouts, the SFT data."""

from __future__ import annotations

from pathlib import Path

import typer

from terminus.cli import _run, _sandbox, app, tasks_app
from terminus.cli.support import (
    EPISODES_AT_ONCE,
    FORCE_HELP,
    REQUEST_TIMEOUT_HELP,
    RETRIES_HELP,
    RETRY_FAILED_HELP,
    TURN_LIMIT,
    endpoint_options,
    outcome_line,
    pull_option,
    seconds,
    set_option,
    write_resolved,
)
from terminus.collect.collect import collect
from terminus.collect.runner import start_failed
from terminus.collect.validate import validate_tasks
from terminus.errors import TerminusError
from terminus.models import shared_policy
from terminus.models.openai_compat import api_key_from_env
from terminus.sandbox import Backend
from terminus.sandbox.pull import Pull
from terminus.settings import Collect
from terminus.swe.corpus import build_swe_corpus
from terminus.tasks.build import build_corpus
from terminus.tasks.splits import corpus_stats, format_stats
from terminus.train.data import KeepRule, build_sft_dataset
from terminus.train.fit import recipe_length


@tasks_app.command("build")
def tasks_build(
    config: Path = typer.Option(Path("configs/config.yaml"), help="Experiment config (smoke default)."),
    sets: list[str] = set_option(),
    out: Path = typer.Option(..., help="Task file to write (JSON lines); snapshots go to repos/ next to it."),
    quiet: bool = typer.Option(False, help="No progress bar."),
) -> None:
    """Build the corpus: synthetic projects, registry mutants, manifests; queries; splits by repository."""

    run = _run(config, sets=sets)
    write_resolved(run, out)
    tasks = build_corpus(run, out, show_progress=not quiet, swe_source=build_swe_corpus)
    typer.echo(format_stats(corpus_stats(tasks)))
    typer.echo(f"wrote {out}")


@tasks_app.command("validate")
def tasks_validate(
    tasks: Path = typer.Option(..., help="Task file from `terminus tasks build`."),
    out: Path = typer.Option(..., help="Task file of the tasks whose ground truth the expert reproduces."),
    report: Path = typer.Option(None, help="Report JSON (default: <out>.validation.json)."),
    sandbox: Backend = typer.Option(None, help="Sandbox backend (default: bwrap where installed)."),
    pull: Pull = pull_option(),
    concurrency: int = typer.Option(EPISODES_AT_ONCE, min=1, help="Episodes at once."),
    config: Path = typer.Option(
        None, help="Experiment config: its `sandbox` and `sandbox_image` (unless --sandbox), `collect.max_turns`."
    ),
    sets: list[str] = set_option(),
    quiet: bool = typer.Option(False, help="No progress bar."),
    force: bool = typer.Option(False, help=FORCE_HELP),
) -> None:
    """Run the scripted expert on every task; keep the tasks whose facts its answer states, report the rest."""

    report = report or out.with_suffix(".validation.json")
    if config is None:
        spec, max_turns = _sandbox(sandbox, None, sets, pull), TURN_LIMIT
    else:
        run = _run(config, sandbox, sets, pull)
        spec, max_turns = run.sandbox, run.cfg.collect.max_turns  # the teacher's turn limit
        write_resolved(run, out)
    result = validate_tasks(
        tasks,
        out,
        report,
        sandbox=spec,
        max_turns=max_turns,
        concurrency=concurrency,
        show_progress=not quiet,
        force=force,
    )
    typer.echo(
        f"{result['kept']} of {result['tasks']} tasks reproduce their ground truth; "
        f"{result['dropped']} dropped (see {report})"
    )


@app.command("collect")
def collect_command(
    tasks: Path = typer.Option(..., help="Validated task file."),
    policy: str = typer.Option(None, help="Teacher: scripted | openai | vllm | transformers. Default: config's."),
    out: Path = typer.Option(..., help="Trajectories (JSON lines); a rerun resumes and does only what is missing."),
    model: str = typer.Option(None, help="Model id or folder (openai, vllm, transformers). Default: config's."),
    base_url: str = typer.Option(None, help="OpenAI-compatible endpoint for --policy openai. Default: config's."),
    api_key_env: str = typer.Option(None, help="Environment variable holding the endpoint's API key."),
    splits: str = typer.Option(None, help="Comma-separated splits to run. Default: config's collect.splits."),
    samples: int = typer.Option(1, min=1, help="Episodes per task."),
    sandbox: Backend = typer.Option(None, help="Sandbox backend (default: bwrap where installed)."),
    pull: Pull = pull_option(),
    concurrency: int = typer.Option(None, min=1, help="Episodes at once. Default: config's."),
    max_turns: int = typer.Option(None, min=2, help="Turn limit per episode. Default: config's."),
    config: Path = typer.Option(
        None,
        help="Experiment config: its `collect` section (each flag overrides its key), `sandbox`, `sandbox_image`.",
    ),
    sets: list[str] = set_option(),
    request_timeout: float = typer.Option(
        None, help=f"{REQUEST_TIMEOUT_HELP} Default: config's.", callback=seconds(0.1)
    ),
    max_retries: int = typer.Option(None, min=0, help=f"{RETRIES_HELP} Default: config's."),
    retry_failed: bool = typer.Option(True, "--retry-failed/--keep-failed", help=RETRY_FAILED_HELP),
    force: bool = typer.Option(False, help=FORCE_HELP),
    quiet: bool = typer.Option(False, help="No progress bar."),
) -> None:
    """Run a teacher over the tasks and write its trajectories."""

    # The config's `collect` section (the defaults' one home without one); a flag overrides its key.
    run = _run(config, sandbox, sets, pull) if config is not None else None
    spec = run.sandbox if run else _sandbox(sandbox, None, sets, pull)
    teach = run.cfg.collect if run else Collect()
    policy, model, base_url = policy or teach.policy, model or teach.model, base_url or teach.base_url
    api_key_env = api_key_env or teach.api_key_env
    chosen = splits.split(",") if splits is not None else teach.splits
    concurrency, max_turns = concurrency or teach.concurrency, max_turns or teach.max_turns
    request_timeout = request_timeout if request_timeout is not None else teach.request_timeout
    max_retries = max_retries if max_retries is not None else teach.max_retries
    if run:
        write_resolved(run, out)
    try:
        key = api_key_from_env(api_key_env, "--api-key-env")
        options = endpoint_options(policy, request_timeout, max_retries, key)
        # one teacher for the whole stage: a vllm model is served once and called by every episode
        with shared_policy(policy, model, base_url, log_dir=out.parent, **options) as teacher:
            records = collect(
                tasks,
                teacher,
                out,
                splits=tuple(s.strip() for s in chosen if s.strip()),
                samples=samples,
                sandbox=spec,
                max_turns=max_turns,
                concurrency=concurrency,
                show_progress=not quiet,
                force=force,
                retry_failed=retry_failed,
            )
    except OSError as err:  # the system refused a file or model folder: its message names it
        raise TerminusError(str(err)) from err
    typer.echo(outcome_line(records, out, "trajectories"))
    # The file is written; a rerun retries the crashed episodes. An episode whose task did not start (its image,
    # its setup) is the task's, not the teacher's: counted above and left out of the SFT data (it has no answer),
    # and it fails the stage only when no episode started at all.
    crashed = [r for r in records if r["termination"] == "crash"]
    if crashed and (len(crashed) == len(records) or not all(start_failed(r) for r in crashed)):
        raise typer.Exit(1)


@app.command("sft-data")
def sft_data(
    trajectories: Path = typer.Option(..., help="Teacher trajectories from `terminus collect`."),
    tasks: Path = typer.Option(..., help="The task file they were collected on."),
    out: Path = typer.Option(..., help="Dataset folder (datasets.save_to_disk) with counts.json."),
    verdicts: Path = typer.Option(None, help="Judge verdicts (from `terminus judge`) to filter by reward."),
    min_recall: float = typer.Option(1.0, help="Minimum fact recall."),
    min_reward: float = typer.Option(0.5, help="Minimum judge reward (with --verdicts)."),
    augment: int = typer.Option(0, help="Renamed copies of each training conversation (terminus.train.augment)."),
    decision_copies: int = typer.Option(
        0, min=0, help="Copies of each training conversation cut after the command that follows the listing."
    ),
    seed: int = typer.Option(0, help="Seed of the renamings."),
    recipe: Path = typer.Option(
        None, help="The SFT recipe: its max_length, which every conversation is made to fit with its end whole."
    ),
    model: str = typer.Option(
        None, help="The model whose tokenizer measures them (default: the recipe's model_name_or_path)."
    ),
) -> None:
    """Filter trajectories and convert them to chat conversations with tool calls for TRL's SFTTrainer."""

    tokenizer, max_length = recipe_length(recipe, model) if recipe is not None else (None, None)
    counts = build_sft_dataset(
        trajectories,
        tasks,
        out,
        verdicts=verdicts,
        rule=KeepRule(min_recall=min_recall, min_reward=min_reward),
        augment=augment,
        decision_copies=decision_copies,
        seed=seed,
        tokenizer=tokenizer,
        max_length=max_length,
    )
    typer.echo(f"train {counts['train']}, validation {counts['validation']}; dropped {counts['dropped']}")
    if "length" in counts:
        typer.echo(f"length {counts['length']}")
    typer.echo(f"by language {counts['by_language']}\nby type {counts['by_type']}\nby source {counts['by_source']}")
