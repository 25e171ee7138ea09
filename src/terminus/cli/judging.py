"""`judge`, `judge-validity`: verdicts on trajectories, and how often each scorer ranks the truth first."""

from __future__ import annotations

import json
from pathlib import Path

import typer

from terminus.agent import trajectory
from terminus.cli import _run, app
from terminus.cli.support import (
    REQUEST_TIMEOUT_HELP,
    RETRIES_HELP,
    override_endpoint_limits,
    seconds,
    set_option,
    write_resolved,
)
from terminus.config import stamp
from terminus.determinism import machine
from terminus.errors import TerminusError
from terminus.io import read_jsonl, write_json_atomic, write_jsonl_atomic
from terminus.judge.setup import judge_cache_dir, judge_from_config, scorer_from_config
from terminus.judge.validity import LABELS, load_labels, validity_report
from terminus.tasks.record import Task, load_tasks


@app.command("judge")
def judge_command(
    trajectories: Path = typer.Option(..., help="Trajectories to score (JSON lines)."),
    tasks: Path = typer.Option(..., help="Their task file (ground truth)."),
    out: Path = typer.Option(..., help="Verdict records (JSON lines)."),
    references: Path = typer.Option(None, help="Reference trajectories (e.g. the expert's), keyed by task."),
    config: Path = typer.Option(Path("configs/config.yaml"), help="Experiment config (its `judge` section)."),
    sets: list[str] = set_option(),
    no_llm: bool = typer.Option(False, "--no-llm", help="Fact checker only, even if the config names a judge."),
    request_timeout: float = typer.Option(
        None, help=f"{REQUEST_TIMEOUT_HELP} Default: config's.", callback=seconds(0.1)
    ),
    max_retries: int = typer.Option(None, min=0, help=f"{RETRIES_HELP} Default: config's."),
) -> None:
    """Score trajectories: LLM judge against the reference plus the fact checker, one reward each."""

    run = override_endpoint_limits(_run(config, sets=sets), "judge", request_timeout, max_retries)
    cfg = run.config
    task_map = {t.id: t for t in load_tasks(tasks)}
    records = read_jsonl(trajectories, trajectory.FIELDS, required=("id", "task_id"))
    refs = read_jsonl(references, trajectory.FIELDS, required=("task_id",)) if references else []
    refs = {r["task_id"]: r for r in refs}
    # a bad judge.scorer is a ScorerConfigError: OneLineErrors prints it in one line, before any judge is served
    with scorer_from_config(run.cfg, task_map, judge_cache_dir(cfg), no_llm=no_llm, references=refs) as scorer:
        try:
            verdicts = scorer.score(records)
        except KeyError as err:
            raise TerminusError(str(err)) from err
    write_jsonl_atomic(out, verdicts)
    write_resolved(run, out)
    mean = sum(v["reward"] for v in verdicts) / max(1, len(verdicts))
    bad = sum(v["judge_unparseable"] for v in verdicts)
    typer.echo(f"{len(verdicts)} verdicts in {out}; mean reward {mean:.3f}; unparseable judge replies {bad}")


@app.command("judge-validity")
def judge_validity(
    trajectories: Path = typer.Option(..., help="The scripted expert's trajectories (from `tasks validate`)."),
    tasks: Path = typer.Option(..., help="Their task file."),
    out: Path = typer.Option(None, help="Report (default results/<run>/judge/validity.json)."),
    config: Path = typer.Option(Path("configs/config.yaml"), help="Experiment config (its `judge` section)."),
    sets: list[str] = set_option(),
    llm: bool = typer.Option(
        False, "--llm", help="The LLM judge must run (an error if the config names none, or most replies are unread)."
    ),
    llm_pairs: int = typer.Option(None, min=1, help="Pairs the LLM judge scores (default: judge.validity_llm_pairs)."),
    labels: Path = typer.Option(LABELS, help="Human-labelled pairs (*.jsonl); agreement is reported when any exist."),
) -> None:
    """How often each scorer ranks a correct episode above a corrupted copy; LLM judge vs fact checker; agreement of
    each with people's labels."""

    run = _run(config, sets=sets)
    cfg = run.config
    out = out or run.run_dir / "judge" / "validity.json"
    write_resolved(run, out)
    task_map = {t.id: t for t in load_tasks(tasks)}
    records = read_jsonl(trajectories, trajectory.FIELDS, required=("id", "task_id"))
    records = [r for r in records if r["task_id"] in task_map]
    judge_cfg = run.cfg.judge
    note = ""
    if not judge_cfg.endpoint and judge_cfg.serve:
        note = (
            f"The LLM judge here is {judge_cfg.serve}, a tiny local model served by vLLM: this run checks the "
            "plumbing end to end, and its LLM figures mean nothing. Configure judge.endpoint for a real judge; "
            "the same command then gives the real figure."
        )
    elif not judge_cfg.endpoint:
        note = "No LLM judge configured (judge.endpoint and judge.serve are null): fact checker only."
    if llm and not judge_cfg.endpoint and not judge_cfg.serve:
        raise TerminusError("judge-validity --llm: the config names no LLM judge (judge.endpoint or judge.serve)")
    fields = Task.__dataclass_fields__
    rows = [r | {"task": Task(**{k: v for k, v in r["task"].items() if k in fields})} for r in load_labels(labels)]
    pairs = llm_pairs or judge_cfg.validity_llm_pairs
    with judge_from_config(run.cfg, judge_cache_dir(cfg)) as judge:
        report = validity_report(records, task_map, judge, llm_pairs=pairs, seed=run.seed, note=note, labels=rows)
    report.update(stamp(cfg) | {"machine": machine()})
    scored = report["llm_judge"]
    if llm and scored["n"] and scored["unparseable_pairs"] > scored["n"] / 2:
        write_json_atomic(out, report)
        raise TerminusError(
            f"judge-validity --llm: {scored['unparseable_pairs']} of {scored['n']} pairs got an unreadable judge "
            f"reply ({scored['model']}); GRPO would train on the fact checker alone (report: {out})"
        )
    write_json_atomic(out, report)
    typer.echo(json.dumps(report, indent=1))
