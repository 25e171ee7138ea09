"""`terminus swe ...`: grade predictions, validate instances, turn instances into corpus tasks."""

from __future__ import annotations

import json
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import typer

from terminus.cli import _run, swe_app
from terminus.cli.support import check_output, pull_option, set_option
from terminus.errors import TerminusError
from terminus.io import (
    read_jsonl,
    record_fields,
    required_fields,
    write_json_atomic,
    write_jsonl_atomic,
    write_text_atomic,
)
from terminus.sandbox import Backend, SandboxSpec
from terminus.sandbox.pull import Pull, pull_images
from terminus.settings import SweTasks, field_default
from terminus.swe.benchmarks import benchmark_repos, load_benchmark_config, load_instances
from terminus.swe.corpus import label_distribution, select_rebench, selected_instances, tasks_for
from terminus.swe.families import load_rows
from terminus.swe.grade import grade_patch
from terminus.swe.harbor import HarborTask
from terminus.swe.predictions import read_predictions
from terminus.swe.record import RepairInstance, file_names
from terminus.swe.validate import validate_instances
from terminus.tasks.record import write_tasks
from terminus.tasks.splits import assign_splits, format_stats

# Instances at once: the corpus stage's SWE validation setting, the one home of that default.
INSTANCES_AT_ONCE = field_default(SweTasks, "concurrency")


def _instances(dataset: str | None, benchmark: str | None, split: str | None, ids: str | None):
    if not dataset and not benchmark:
        raise TerminusError("give --dataset (a JSONL/JSON/CSV file or a hub id) or --benchmark")
    instances = load_instances(
        benchmark, dataset=dataset, split=split, ids=[i for i in (ids or "").split(",") if i] or None
    )
    if any(isinstance(i, HarborTask) for i in instances):  # no patch to grade: its state is the agent's sandbox
        raise TerminusError(f"{benchmark} is a Harbor benchmark: its tasks are graded in eval cells, not by patches")
    return instances


def _one_line(text: str, width: int = 400) -> str:
    """An error with its log lines joined, for a terminal line (the report files keep them whole)."""
    joined = " | ".join(line.strip() for line in text.splitlines() if line.strip())
    return joined if len(joined) <= width else joined[: width - 3] + "..."


def _text(path: Path, flag: str) -> str:
    """The text of a file given by `flag`: one error line when it is missing or not UTF-8."""
    if not path.is_file():
        raise TerminusError(f"{flag} {path} does not exist")
    try:
        return path.read_bytes().decode("utf-8")
    except UnicodeDecodeError as err:
        raise TerminusError(f"{flag} {path}: not UTF-8 text (byte {err.start})") from err


def _json_object(path: Path, flag: str) -> dict:
    try:
        data = json.loads(_text(path, flag))
    except json.JSONDecodeError as err:
        raise TerminusError(f"{flag} {path}: not JSON ({err.msg} at line {err.lineno})") from err
    if not isinstance(data, dict):
        raise TerminusError(f"{flag} {path}: not a JSON object")
    return data


def _repair_instances(path: Path) -> list:
    _text(path, "--instances")  # missing, or not UTF-8: one line naming the flag
    # field types and the fields it needs checked per line (file:line); one it does not know is from_dict's error
    records = read_jsonl(path, record_fields(RepairInstance), required=required_fields(RepairInstance))
    return [RepairInstance.from_dict(record) for record in records]


BIND_HELP = (
    "A host path the tests need, bound read-only (repeatable): an interpreter, a venv or a toolchain under /home "
    "or /tmp, which bwrap keeps private. Rows may list their own in `binds`."
)


def _check_binds(binds: list[str] | None) -> list[str]:
    for path in binds or []:
        if not path.startswith("/") or not Path(path).exists():
            raise TerminusError(f"--bind {path}: not an absolute path that exists on this machine")
    return list(binds or [])


def _spec(
    sandbox: Backend | None, docker_url: str | None, binds: list[str] | None = None, pull: Pull | None = None
) -> SandboxSpec:
    """The command's sandbox: the backend, --bind's host paths, docker's engine and when it pulls; each instance
    brings its image and its row's binds into it (`SandboxSpec.for_task`)."""
    return SandboxSpec(sandbox, binds=tuple(_check_binds(binds)), docker_url=docker_url, pull=pull)


@swe_app.command("grade")
def grade_command(
    dataset: str = typer.Option(None, help="Rows in a SWE-bench-family schema: a JSONL/JSON/CSV file or a hub id."),
    predictions: Path = typer.Option(
        ...,
        help="SWE-bench JSONL {instance_id, model_name_or_path, model_patch} "
        "(or SWE-Bench Pro's JSON list {instance_id, patch, prefix}).",
    ),
    sandbox: Backend = typer.Option(..., help="Sandbox backend."),
    pull: Pull = pull_option(),
    out: Path = typer.Option(..., help="Report: {instance_id: {resolved, fail_to_pass, pass_to_pass}}."),
    split: str = typer.Option(None, help="Split of a hub dataset (default: the benchmark's, else test)."),
    benchmark: str = typer.Option(None, help="configs/benchmarks/<name>.yaml: images, test commands, parsers."),
    instance_ids: str = typer.Option(None, help="Comma-separated ids to grade (default: every predicted one)."),
    concurrency: int = typer.Option(INSTANCES_AT_ONCE, min=1, help="Instances at once."),
    docker_url: str = typer.Option(None, help="Docker engine URL (default: DOCKER_HOST or the default socket)."),
    logs: Path = typer.Option(
        None, help="Folder for each instance's test log (<id>.log; index.json maps ids to files when they differ)."
    ),
    bind: list[str] = typer.Option(None, "--bind", help=BIND_HELP),
) -> None:
    """Grade predictions: resolved iff every FAIL_TO_PASS and PASS_TO_PASS test passes after the patch."""

    spec = _spec(sandbox, docker_url, bind, pull)
    check_output(out, "--out")  # before the grading, which a late error would lose
    if logs:
        check_output(logs, "--logs", "folder")
    patches = read_predictions(predictions)
    instances = _instances(dataset, benchmark, split, instance_ids)
    by_id = {i.instance_id: i for i in instances}
    wanted = [i for i in (instance_ids or "").split(",") if i]
    if wanted:  # the dataset was filtered to these: other predictions are not graded, and are no error
        missing = sorted(set(wanted) - set(by_id))
        if missing:
            raise TerminusError(f"--instance-ids: {len(missing)} ids are not in the dataset, e.g. {missing[0]}")
        patches = {i: patch for i, patch in patches.items() if i in by_id}
    unknown = sorted(set(patches) - set(by_id))
    if unknown:
        raise TerminusError(
            f"{predictions}: {len(unknown)} predictions name no instance of the dataset, e.g. {unknown[0]}"
        )
    todo = [by_id[i] for i in patches]
    names = file_names([inst.instance_id for inst in todo], ".log")  # known before any grading starts
    with ThreadPoolExecutor(max_workers=concurrency) as pool:
        results = list(pool.map(lambda inst: grade_patch(inst, patches[inst.instance_id], spec), todo))
    report = {r.instance_id: r.report() for r in results}
    write_text_atomic(out, json.dumps(report, indent=1, sort_keys=True) + "\n")
    if logs:
        for r in results:
            # The log is normalised text already (capped at testlog.LOG_CAP_BYTES); an error may quote a patch's
            # lone surrogates, which cannot be written as UTF-8.
            error = f"error: {r.error}\n".encode("utf-8", "replace").decode() if r.error else ""
            write_text_atomic(logs / names[r.instance_id], error + r.log)
        write_text_atomic(logs / "index.json", json.dumps(names, indent=1, sort_keys=True) + "\n")
    resolved = sum(r.resolved for r in results)
    errors = [r for r in results if r.error]
    typer.echo(f"{resolved} of {len(results)} instances resolved; report in {out}")
    for r in errors[:5]:
        typer.echo(f"  {r.instance_id}: {_one_line(r.error)}")
    for r in [r for r in results if r.outside_workspace][:5]:
        typer.echo(
            f"  warning: {r.instance_id}: the tests imported {r.outside_workspace[0]} from outside the workspace; "
            "its test_cmd does not test the patched tree"
        )


@swe_app.command("validate")
def validate_command(
    dataset: str = typer.Option(None, help="Rows in a SWE-bench-family schema: a JSONL/JSON/CSV file or a hub id."),
    sandbox: Backend = typer.Option(..., help="Sandbox backend."),
    pull: Pull = pull_option(),
    out: Path = typer.Option(..., help="The instances that hold (JSON lines of repair instances)."),
    report: Path = typer.Option(None, help="Report JSON (default: <out>.validation.json)."),
    split: str = typer.Option(None, help="Split of a hub dataset."),
    benchmark: str = typer.Option(None, help="configs/benchmarks/<name>.yaml."),
    instance_ids: str = typer.Option(None, help="Comma-separated ids (default: all)."),
    concurrency: int = typer.Option(INSTANCES_AT_ONCE, min=1, help="Instances at once."),
    docker_url: str = typer.Option(None, help="Docker engine URL."),
    bind: list[str] = typer.Option(None, "--bind", help=BIND_HELP),
) -> None:
    """Keep the instances whose F2P fail and P2P pass at base + test patch, and all pass with the gold patch."""

    spec = _spec(sandbox, docker_url, bind, pull)
    report = report or out.with_suffix(".validation.json")
    check_output(out, "--out")
    check_output(report, "--report")
    instances = _instances(dataset, benchmark, split, instance_ids)
    kept, result = validate_instances(instances, spec, concurrency=concurrency)
    write_jsonl_atomic(out, [i.to_dict() for i in kept])
    write_json_atomic(report, result)
    causes = result["dropped_by_cause"]
    typer.echo(
        f"{result['kept']} of {result['instances']} instances hold; {result['dropped']} dropped "
        f"({causes['environment']} for the environment, {causes['instance']} for the instance; see {report})"
    )
    for iid, reason in list(result["reasons"].items())[:5]:
        typer.echo(f"  {iid}: {_one_line(reason)}")


@swe_app.command("tasks")
def tasks_command(
    out: Path = typer.Option(..., help="Task file (JSON lines); local repositories get snapshots in repos/ beside."),
    instances: Path = typer.Option(None, help="Repair instances from `terminus swe validate`."),
    dataset: str = typer.Option(None, help="Or rows in a SWE-bench-family schema (unvalidated)."),
    benchmark: str = typer.Option(None, help="configs/benchmarks/<name>.yaml (with --dataset)."),
    split: str = typer.Option(None, help="Split of a hub dataset."),
    report: Path = typer.Option(None, help="A validation report: facts from the statuses its runs observed."),
    splits: Path = typer.Option(None, help="{repo: split} from `terminus swe select` (default: 0.9/0.05/0.05)."),
    seed: int = typer.Option(0, help="Seed of the queries and splits."),
    bind: list[str] = typer.Option(None, "--bind", help=BIND_HELP + " Recorded in each task's meta.binds."),
    sandbox: Backend = typer.Option(
        None, help="Sandbox backend of a local repository's test setup (default: bwrap where installed, else local)."
    ),
    docker_url: str = typer.Option(None, help="Docker engine URL (with --sandbox docker)."),
    pull: Pull = pull_option(),
) -> None:
    """Corpus tasks (test-execution, error-diagnosis, dependency, build/compile) from repair instances. A local
    repository's test setup (the test patch, or SWE-Bench Pro's `before_repo_set_cmd`) runs in a sandbox."""

    spec = _spec(sandbox, docker_url, pull=pull)
    check_output(out, "--out")
    check_output(out.with_suffix(".stats.json"), "--out")
    chosen = _repair_instances(instances) if instances else _instances(dataset, benchmark, split, None)
    observed = (_json_object(report, "--report").get("observed") if report else None) or {}
    if not isinstance(observed, dict):
        raise TerminusError(
            f"--report {report}: its `observed` is not an object (is it a `terminus swe validate` report?)"
        )
    binds = _check_binds(bind)
    tasks = []
    for inst in chosen:
        inst.binds = list(dict.fromkeys([*inst.binds, *binds]))
        tasks += tasks_for(inst, out, observed.get(inst.instance_id), seed, spec)
    if not tasks:
        raise TerminusError("no instances, so no tasks")
    by_repo = assign_splits([t.repo for t in tasks], {"train": 0.9, "val": 0.05, "test": 0.05}, seed)
    if splits:
        chosen_splits = _json_object(splits, "--splits")
        missing = sorted({t.repo for t in tasks} - set(chosen_splits))
        if missing:
            raise TerminusError(f"--splits {splits} has no split for repository {missing[0]}")
        by_repo = chosen_splits
    for task in tasks:
        task.split = by_repo[task.repo]
    tasks.sort(key=lambda t: t.id)
    write_tasks(out, tasks)
    stats = label_distribution(tasks)
    write_text_atomic(out.with_suffix(".stats.json"), json.dumps(stats, indent=1) + "\n")
    typer.echo(format_stats(stats))
    typer.echo(f"wrote {out} and {out.with_suffix('.stats.json')}")


@swe_app.command("select")
def select_command(
    out: Path = typer.Option(..., help="The selected rows (JSON lines); their splits go to <out>.splits.json."),
    config: str = typer.Option("swe-rebench-v2", help="Selection config: a name in configs/benchmarks or a file."),
    dataset: str = typer.Option(None, help="Rows (default: the config's hub dataset), e.g. a local JSONL."),
) -> None:
    """The SWE-rebench-V2 training selection: languages, no eval-benchmark repository, capped per repository."""

    check_output(out, "--out")
    cfg = load_benchmark_config(config)
    rows = load_rows(dataset or cfg["dataset"], cfg.get("split"))
    exclude = set(cfg.get("exclude_repos") or []) | benchmark_repos(cfg.get("exclude_benchmarks") or [])
    chosen, splits = select_rebench(rows, cfg, exclude)
    write_text_atomic(out, "".join(json.dumps(r, default=str, sort_keys=True) + "\n" for r in chosen))
    write_text_atomic(out.with_suffix(".splits.json"), json.dumps(splits, indent=1, sort_keys=True) + "\n")
    languages = Counter(str(r.get("language")) for r in chosen)
    typer.echo(
        f"{len(chosen)} instances from {len(splits)} repositories ({dict(languages)}); "
        f"splits by repository {dict(Counter(splits.values()))}; wrote {out}"
    )


@swe_app.command("pull")
def pull_command(
    benchmark: str = typer.Option(
        ..., help="configs/benchmarks/<name>: the config's tasks.swe selection when it names it, else an eval one."
    ),
    config: Path = typer.Option(Path("configs/config.yaml"), help="Experiment config: the datasets and limits."),
    sets: list[str] = set_option(),
    pull: Pull = typer.Option(
        Pull.MISSING, help="missing: pull the absent images; always: every one again; never: list the absent ones."
    ),
    docker_url: str = typer.Option(None, help="Docker engine URL (default: DOCKER_HOST or the default socket)."),
    out: Path = typer.Option(None, help="Report JSON: {present, pulled, failed: {image: error}}."),
) -> None:
    """Pre-pull a benchmark's docker images on this node, so that no episode waits for (or drops on) a pull."""

    run = _run(config, sets=sets)
    if out is not None:
        check_output(out, "--out")
    swe = run.config["tasks"]["swe"]
    if benchmark == swe["config"]:  # the training selection, as the tasks stage selects it
        instances, _ = selected_instances(swe)
    else:
        dataset = run.cfg.eval.swe.datasets.get(benchmark)
        instances = load_instances(benchmark, dataset=dataset, limit=run.cfg.eval.swe.limit)
    images = sorted({i.image for i in instances if i.image})
    typer.echo(f"{benchmark}: {len(images)} images for {len(instances)} instances")
    report = pull_images(images, docker_url, pull)
    if out is not None:
        write_json_atomic(out, report | {"benchmark": benchmark, "images": len(images)})
    failed = report["failed"]
    typer.echo(f"{len(report['present'])} present, {len(report['pulled'])} pulled, {len(failed)} failed")
    if failed:
        first = "; ".join(_one_line(err, 200) for err in list(failed.values())[:3])
        raise TerminusError(f"{len(failed)} of {len(images)} images of {benchmark} are not on this node: {first}")
