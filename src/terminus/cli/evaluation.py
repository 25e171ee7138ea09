"""`eval` (grid cells), `eval-summary`, `case-study`."""

from __future__ import annotations

import json
from pathlib import Path

import typer

from terminus.agent import trajectory
from terminus.cli import _run, app, support
from terminus.collect.provenance import file_sha256
from terminus.config import stamp
from terminus.errors import TerminusError
from terminus.eval import record as eval_record
from terminus.eval.case_study import case_study
from terminus.eval.grid import check_models, merge_cells, run_cell, run_grid
from terminus.eval.noninferiority import COLUMNS, noninferiority_rows
from terminus.eval.summary import summarise, write_csv
from terminus.io import read_jsonl, write_json_atomic
from terminus.judge.setup import judge_cache_dir, scorer_from_config
from terminus.tasks.record import load_tasks


@app.command("eval")
def eval_command(
    config: Path = typer.Option(Path("configs/config.yaml"), help="Experiment config (its `eval` section)."),
    sets: list[str] = support.set_option(),
    tasks: Path = typer.Option(..., help="Validated task file."),
    out: Path = typer.Option(None, help="Folder (default results/<run>/eval): cells/, records.jsonl, summary.csv."),
    references: Path = typer.Option(None, help="Expert trajectories: the judge's references."),
    cell: list[str] = typer.Option(
        [], help="Run only this cell, <main>__<sub>__<bench>__<seed> (repeatable); `terminus eval-summary` merges."
    ),
    no_llm: bool = typer.Option(False, "--no-llm", help="Score the execution benchmark with the fact checker only."),
    request_timeout: float = typer.Option(
        None, help=f"{support.REQUEST_TIMEOUT_HELP} Default: config's.", callback=support.seconds(0.1)
    ),
    max_retries: int = typer.Option(None, min=0, help=f"{support.RETRIES_HELP} Default: config's."),
    retry_failed: bool = typer.Option(True, "--retry-failed/--keep-failed", help=support.RETRY_FAILED_HELP),
    force: bool = typer.Option(False, help=support.FORCE_HELP),
    quiet: bool = typer.Option(False, help="No progress bar."),
) -> None:
    """Run grid cells (resumable), each with its subagent loaded or served once; without --cell, every cell and
    then per-cell metrics with bootstrap intervals and paired differences."""

    run = support.override_endpoint_limits(_run(config, sets=sets), "eval", request_timeout, max_retries)
    out = out or run.run_dir / "eval"
    task_map = {t.id: t for t in load_tasks(tasks)}
    run = run.with_cfg(run.cfg.model_copy(update={"eval": check_models(run.cfg.eval, cell or None)}))
    cfg = run.config
    support.write_resolved(run, out, folder=True)
    inputs = {"config_hash": cfg["_hash"], "tasks_sha256": file_sha256(tasks), "no_llm": no_llm}
    resume = {"force": force, "retry_failed": retry_failed, "provenance": inputs}
    refs = read_jsonl(references, trajectory.FIELDS, required=("task_id",)) if references else []
    refs = {r["task_id"]: r for r in refs}
    # group=False: eval has always scored each episode alone, whatever judge.group says
    with scorer_from_config(
        run.cfg, task_map, judge_cache_dir(cfg), no_llm=no_llm, references=refs, group=False, stage="eval"
    ) as scorer:
        if cell:
            for name in cell:
                records = run_cell(run, tasks, out, scorer, name, show_progress=not quiet, resume=resume)
                typer.echo(f"{len(records)} episodes in {out / 'cells' / (name + '.jsonl')}")
            return
        run_grid(run, tasks, out, scorer, show_progress=not quiet, resume=resume)
    _eval_summary(cfg, out)


@app.command("eval-summary")
def eval_summary_command(
    config: Path = typer.Option(Path("configs/config.yaml"), help="Experiment config (its `eval` section)."),
    sets: list[str] = support.set_option(),
    out: Path = typer.Option(None, help="Eval folder (default results/<run>/eval) holding cells/."),
) -> None:
    """Merge the cells' records into records.jsonl and write summary.csv (per-cell metrics, intervals, pairs)."""
    run = _run(config, sets=sets)
    out = out or run.run_dir / "eval"
    _eval_summary(run.config, out)
    support.write_resolved(run, out, folder=True)


def _eval_summary(cfg: dict, out: Path) -> None:
    records = merge_cells(cfg, out)
    n_boot = cfg["analysis"]["bootstrap"]
    rows = summarise(records, stamp(cfg), n_boot=n_boot)
    write_csv(rows, out / "summary.csv")
    kinds = {name: spec["kind"] for name, spec in cfg["eval"]["contexts"].items()}
    margin = cfg["analysis"]["noninferiority_margin"]
    tests = noninferiority_rows(records, margin, context_kinds=kinds, n_boot=n_boot)
    write_csv([r | stamp(cfg) for r in tests], out / "noninferiority.csv", columns=[*COLUMNS, *stamp(cfg)])
    typer.echo(
        f"{len(records)} episodes; {len(rows)} arms in {out / 'summary.csv'}; {len(tests)} in noninferiority.csv"
    )


@app.command("case-study")
def case_study_command(
    records: Path = typer.Option(..., help="results/<run>/eval/records.jsonl"),
    out: Path = typer.Option(..., help="case_study.json to write."),
    task: str = typer.Option(
        None, help="Task id (default: the config's eval.case_study_task, else the largest saving at equal outcome)."
    ),
    subagent: str = typer.Option("scripted", help="Which subagent's episode to set against No-Subagent."),
    config: Path = typer.Option(None, help="Experiment config (its eval.case_study_task); none: the saving picks."),
    sets: list[str] = support.set_option(),
) -> None:
    """Serilog-style side by side: main-agent tokens, turns, terminal calls; the subagent's commands and summary."""
    if config is not None:
        task = task or _run(config, sets=sets).cfg.eval.case_study_task
    elif sets:
        raise TerminusError("--set changes a config: give --config too")
    study = case_study(read_jsonl(records, eval_record.FIELDS, required=eval_record.REQUIRED), task, subagent)
    write_json_atomic(out, study)
    typer.echo(json.dumps({k: v for k, v in study.items() if k != "with_subagent"}, indent=1))
