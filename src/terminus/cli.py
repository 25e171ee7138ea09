"""The `terminus` command: one subcommand per stage, plus `exec`, `mcp`, `serve` and `swe`."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import sys
from pathlib import Path

import typer

from terminus.cli_support import (
    COPY_HELP,
    FORCE_HELP,
    REQUEST_TIMEOUT_HELP,
    RETRIES_HELP,
    RETRY_FAILED_HELP,
    OneLineErrors,
    endpoint_options,
    outcome_line,
    override_endpoint_limits,
)
from terminus.errors import set_debug
from terminus.sandbox import BACKENDS, SandboxError, default_backend, make_sandbox
from terminus.swe.cli import app as swe_app

app = typer.Typer(add_completion=False, no_args_is_help=True, help=__doc__, cls=OneLineErrors)
app.add_typer(swe_app, name="swe", help="SWE-bench-family instances: grade, validate, corpus tasks.")

DEMO_PROJECT = Path(__file__).resolve().parents[2] / "examples" / "demo-project"


def _fail(message: str) -> None:
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(2)


@app.callback()
def _options(debug: bool = typer.Option(False, "--debug", help="Tracebacks for errors too (or TERMINUS_DEBUG=1).")):
    set_debug(debug)


@app.command("run")
def run_command(
    command: str = typer.Argument(..., help="Shell command to run in the sandbox."),
    repo: Path = typer.Option(Path("."), help="Repository to copy into the sandbox's workspace."),
    sandbox: str = typer.Option(None, help=f"Backend: {', '.join(BACKENDS)} (default: bwrap where installed)."),
    timeout: float = typer.Option(60.0, help="Seconds before the command is killed."),
    copy: str = typer.Option("git", help=COPY_HELP),
) -> None:
    """Run one command in a sandbox over a copy of REPO and print what the terminal tool returns."""
    from terminus.agent.terminal import observation

    if sandbox and sandbox not in BACKENDS:
        _fail(f"unknown sandbox {sandbox!r}; choose one of {', '.join(BACKENDS)}")
    try:
        with make_sandbox(sandbox, repo, copy=copy) as box:
            typer.echo(observation(box.run(command, timeout)))
    except SandboxError as err:
        _fail(str(err))


@app.command("demo")
def demo(sandbox: str = typer.Option(None, help="Sandbox backend (default: bwrap where installed).")) -> None:
    """Run the Execution Subagent (scripted expert) on the bundled demo project and print what happened."""
    from terminus.agent.loop import ExecutionSubagent, answer_text
    from terminus.models import make_policy

    backend = sandbox or default_backend()
    query = "Run the unit tests and tell me what fails and why."
    typer.echo(f"demo project: {DEMO_PROJECT}\nsandbox: {backend}\nmain agent asks: {query}\n")
    try:
        with make_sandbox(backend, DEMO_PROJECT) as box:
            traj = ExecutionSubagent(make_policy("scripted"), box).run(query)
    except SandboxError as err:
        _fail(str(err))
    tool_outputs = [m["content"] for m in traj.messages if m["role"] == "tool"]
    for turn, output in zip(traj.turns, tool_outputs, strict=False):
        typer.echo(f"$ {turn.command}    # timeout {turn.timeout_ms} ms, took {turn.duration_s:.2f} s")
        lines = output.splitlines()
        shown = lines if len(lines) <= 12 else [*lines[:6], f"... ({len(lines) - 10} lines) ...", *lines[-4:]]
        typer.echo("\n".join(f"  | {line}" for line in shown) + "\n")
    raw = sum(len(o) for o in tool_outputs)
    answer = answer_text(traj)
    typer.echo(f"termination: {traj.termination}; the subagent saw {raw} characters of output and returns:\n")
    typer.echo(answer)


@app.command("exec")
def exec_subagent(
    repo: Path = typer.Option(..., help="Repository the subagent works on (a copy; your tree is never modified)."),
    query: str = typer.Option(..., help="What the main agent asks, e.g. 'run the tests and tell me what fails'."),
    description: str = typer.Option("", help="Optional context from the main agent."),
    policy: str = typer.Option("scripted", help="scripted | openai | transformers | vllm"),
    model: str = typer.Option(None, help="Hub id or model folder (transformers, vllm) or served model (openai)."),
    base_url: str = typer.Option(None, help="OpenAI-compatible endpoint, e.g. http://127.0.0.1:8000/v1."),
    api_key_env: str = typer.Option(None, help="Environment variable holding the endpoint's API key."),
    request_timeout: float = typer.Option(120.0, min=0.1, help=REQUEST_TIMEOUT_HELP),
    max_retries: int = typer.Option(3, min=0, help=RETRIES_HELP),
    sandbox: str = typer.Option(None, help=f"Backend: {', '.join(BACKENDS)} (default: bwrap where installed)."),
    max_turns: int = typer.Option(10, min=1, help="Turn limit; the last turn must give the final answer."),
    as_json: bool = typer.Option(False, "--json", help="Print the whole trajectory record as JSON."),
    copy: str = typer.Option("git", help=COPY_HELP),
) -> None:
    """Run the Execution Subagent on any directory and print its final answer and notes."""
    import json

    from terminus.agent.loop import AgentConfig, ExecutionSubagent, answer_text
    from terminus.models import make_policy

    if not repo.is_dir():
        _fail(f"--repo {repo} does not exist or is not a folder")
    if not query.strip():
        _fail("--query is empty: say what the subagent should do, e.g. --query 'run the tests'")
    if sandbox and sandbox not in BACKENDS:
        _fail(f"unknown sandbox {sandbox!r}; choose one of {', '.join(BACKENDS)}")
    from terminus.models.openai_compat import PolicyError, api_key_from_env

    try:
        key = api_key_from_env(api_key_env, "--api-key-env")
        options = endpoint_options(policy, request_timeout, max_retries, key)
        agent_policy = make_policy(policy, model=model, base_url=base_url, **options)
    except (ValueError, PolicyError, OSError) as err:
        _fail(str(err))
    try:
        with make_sandbox(sandbox, repo, copy=copy) as box:
            traj = ExecutionSubagent(agent_policy, box, AgentConfig(max_turns=max_turns)).run(query, description)
    except SandboxError as err:
        _fail(str(err))
    if traj.termination == "crash":  # e.g. the endpoint went away: one line, non-zero exit
        _fail(f"the episode crashed: {traj.error}")
    if as_json:
        typer.echo(json.dumps(traj.to_dict(), ensure_ascii=False))
    else:
        typer.echo(answer_text(traj))


@app.command("tiny-model")
def tiny_model(
    out: Path = typer.Option(..., help="Folder to write the model to (a Hugging Face model folder)."),
    seed: int = typer.Option(0, help="Initialisation seed."),
    corpus: Path = typer.Option(None, help="Trajectories (JSON lines) to train the tokenizer on, with the prompts."),
) -> None:
    """Build the tiny Qwen3-architecture model and tokenizer (the smoke scale's base model)."""
    from terminus.train.tiny import _seed_corpus, build_tiny_model

    texts = None
    if corpus is not None:
        if not corpus.is_file():
            _fail(f"--corpus {corpus} does not exist")
        texts = _seed_corpus()
        for line in corpus.read_text().splitlines():
            if line.strip():
                record = json.loads(line)
                texts += [m.get("content") or "" for m in record.get("messages", [])]
                texts += [json.dumps(c) for m in record.get("messages", []) for c in m.get("tool_calls") or []]
    path = build_tiny_model(out, texts=texts, seed=seed)
    typer.echo(f"tiny model written to {path}")


tasks_app = typer.Typer(add_completion=False, no_args_is_help=True, help="Build and validate the task corpus.")
app.add_typer(tasks_app, name="tasks")


def _config(path: Path | None) -> dict:
    from terminus.config import ConfigError, load_config

    try:
        cfg = load_config(path)
    except ConfigError as err:
        _fail(str(err))
    from terminus.sandbox.docker import IMAGE_VAR

    if cfg.get("sandbox_image"):  # every sandbox this process makes (threads and all) takes it from here
        os.environ[IMAGE_VAR] = cfg["sandbox_image"]
    return cfg


def _sandbox(sandbox: str | None, config: Path | None) -> str | None:
    """--sandbox when given, else the config's `sandbox` (when --config is given), else the default backend."""
    if sandbox and sandbox not in BACKENDS:
        _fail(f"unknown sandbox {sandbox!r}; choose one of {', '.join(BACKENDS)}")
    if sandbox or config is None:
        return sandbox
    return _config(config).get("sandbox")


@tasks_app.command("build")
def tasks_build(
    config: Path = typer.Option(Path("configs/config.yaml"), help="Experiment config (smoke default)."),
    out: Path = typer.Option(..., help="Task file to write (JSON lines); snapshots go to repos/ next to it."),
    quiet: bool = typer.Option(False, help="No progress bar."),
) -> None:
    """Build the corpus: synthetic projects, registry mutants, manifests; queries; splits by repository."""
    from terminus.tasks.build import CorpusError, build_corpus, corpus_stats, format_stats
    from terminus.tasks.manifest import ManifestError

    cfg = _config(config)
    try:
        tasks = build_corpus(cfg, out, show_progress=not quiet)
    except (CorpusError, ManifestError, ValueError) as err:
        _fail(str(err))
    typer.echo(format_stats(corpus_stats(tasks)))
    typer.echo(f"wrote {out}")


@tasks_app.command("validate")
def tasks_validate(
    tasks: Path = typer.Option(..., help="Task file from `terminus tasks build`."),
    out: Path = typer.Option(..., help="Task file of the tasks whose ground truth the expert reproduces."),
    report: Path = typer.Option(None, help="Report JSON (default: <out>.validation.json)."),
    sandbox: str = typer.Option(None, help=f"Backend: {', '.join(BACKENDS)} (default: bwrap where installed)."),
    concurrency: int = typer.Option(4, min=1, help="Episodes at once."),
    config: Path = typer.Option(None, help="Experiment config: its `sandbox` and `sandbox_image` (unless --sandbox)."),
    quiet: bool = typer.Option(False, help="No progress bar."),
    force: bool = typer.Option(False, help=FORCE_HELP),
) -> None:
    """Run the scripted expert on every task; keep the tasks whose facts its answer states, report the rest."""
    from terminus.collect.validate import validate_tasks
    from terminus.tasks.record import TaskFileError

    report = report or out.with_suffix(".validation.json")
    sandbox = _sandbox(sandbox, config)
    try:
        result = validate_tasks(
            tasks, out, report, backend=sandbox, concurrency=concurrency, show_progress=not quiet, force=force
        )
    except TaskFileError as err:
        _fail(str(err))
    typer.echo(
        f"{result['kept']} of {result['tasks']} tasks reproduce their ground truth; "
        f"{result['dropped']} dropped (see {report})"
    )


@app.command("collect")
def collect_command(
    tasks: Path = typer.Option(..., help="Validated task file."),
    policy: str = typer.Option("scripted", help="Teacher: scripted | openai | vllm | transformers."),
    out: Path = typer.Option(..., help="Trajectories (JSON lines); a rerun resumes and does only what is missing."),
    model: str = typer.Option(None, help="Model id or folder (openai, vllm, transformers)."),
    base_url: str = typer.Option(None, help="OpenAI-compatible endpoint for --policy openai."),
    api_key_env: str = typer.Option(None, help="Environment variable holding the endpoint's API key."),
    splits: str = typer.Option("train,val", help="Comma-separated splits to run."),
    samples: int = typer.Option(1, min=1, help="Episodes per task."),
    sandbox: str = typer.Option(None, help=f"Backend: {', '.join(BACKENDS)} (default: bwrap where installed)."),
    concurrency: int = typer.Option(4, min=1, help="Episodes at once."),
    max_turns: int = typer.Option(10, min=2, help="Turn limit per episode."),
    config: Path = typer.Option(None, help="Experiment config: its `sandbox` and `sandbox_image` (unless --sandbox)."),
    request_timeout: float = typer.Option(120.0, min=0.1, help=REQUEST_TIMEOUT_HELP),
    max_retries: int = typer.Option(3, min=0, help=RETRIES_HELP),
    retry_failed: bool = typer.Option(True, "--retry-failed/--keep-failed", help=RETRY_FAILED_HELP),
    force: bool = typer.Option(False, help=FORCE_HELP),
    quiet: bool = typer.Option(False, help="No progress bar."),
) -> None:
    """Run a teacher over the tasks and write its trajectories."""
    from terminus.collect.collect import collect
    from terminus.models import shared_policy
    from terminus.models.openai_compat import PolicyError, api_key_from_env
    from terminus.models.serve import ServeError
    from terminus.tasks.record import TaskFileError

    sandbox = _sandbox(sandbox, config)
    try:
        key = api_key_from_env(api_key_env, "--api-key-env")
        options = endpoint_options(policy, request_timeout, max_retries, key)
        # one teacher for the whole stage: a vllm model is served once and called by every episode
        with shared_policy(policy, model, base_url, log_dir=out.parent, **options) as teacher:
            records = collect(
                tasks,
                teacher,
                out,
                splits=tuple(s.strip() for s in splits.split(",") if s.strip()),
                samples=samples,
                backend=sandbox,
                max_turns=max_turns,
                concurrency=concurrency,
                show_progress=not quiet,
                force=force,
                retry_failed=retry_failed,
            )
    except (TaskFileError, PolicyError, ServeError, ValueError, OSError) as err:
        _fail(str(err))
    typer.echo(outcome_line(records, out, "trajectories"))
    if any(r["termination"] == "crash" for r in records):
        raise typer.Exit(1)  # the file is written; a rerun retries the crashed episodes


@app.command("sft-data")
def sft_data(
    trajectories: Path = typer.Option(..., help="Teacher trajectories from `terminus collect`."),
    tasks: Path = typer.Option(..., help="The task file they were collected on."),
    out: Path = typer.Option(..., help="Dataset folder (datasets.save_to_disk) with counts.json."),
    verdicts: Path = typer.Option(None, help="Judge verdicts (from `terminus judge`) to filter by reward."),
    min_recall: float = typer.Option(1.0, help="Minimum fact recall."),
    min_reward: float = typer.Option(0.5, help="Minimum judge reward (with --verdicts)."),
) -> None:
    """Filter trajectories and convert them to chat conversations with tool calls for TRL's SFTTrainer."""
    from terminus.tasks.record import TaskFileError
    from terminus.train.data import build_sft_dataset

    try:
        counts = build_sft_dataset(
            trajectories, tasks, out, verdicts=verdicts, min_recall=min_recall, min_reward=min_reward
        )
    except (TaskFileError, FileNotFoundError, ValueError) as err:
        _fail(str(err))
    typer.echo(f"train {counts['train']}, validation {counts['validation']}; dropped {counts['dropped']}")
    typer.echo(f"by language {counts['by_language']}\nby type {counts['by_type']}\nby source {counts['by_source']}")


@contextlib.contextmanager
def _judge_from_config(cfg: dict, run: Path, no_llm: bool = False):
    """The LLM judge the config names (an endpoint, or a local model served with vLLM for the run), or None."""
    from terminus.judge.llm import JudgeError, LLMJudge
    from terminus.judge.rubric import RubricError, load_rubric

    judge_cfg = cfg["judge"]
    try:
        rubric = load_rubric(judge_cfg["rubric"])
    except RubricError as err:
        _fail(str(err))
    endpoint, serve = judge_cfg.get("endpoint"), judge_cfg.get("serve")
    common = {
        "prompts": Path(judge_cfg["prompts"]),
        "cache_dir": run / "judge" / "cache",
        "concurrency": judge_cfg["concurrency"],
        "max_tokens": judge_cfg["max_tokens"],
        "request_timeout": judge_cfg.get("request_timeout"),
        "max_retries": judge_cfg.get("max_retries"),
    }
    if no_llm or (not endpoint and not serve):
        yield None
    elif endpoint:
        if not endpoint.get("model"):
            _fail("judge.endpoint needs a model")
        try:
            yield LLMJudge(rubric, endpoint["model"], endpoint.get("base_url"), endpoint.get("api_key_env"), **common)
        except JudgeError as err:
            _fail(str(err))
    else:
        from terminus.models.serve import ServeError, vllm_server

        if not Path(serve).is_dir():
            _fail(f"judge.serve: model folder {serve} does not exist (build it with `terminus tiny-model`)")
        try:
            weights = sorted(Path(serve).glob("*.safetensors"))
            digest = hashlib.sha256(b"".join(p.read_bytes() for p in weights)).hexdigest()[:16]
            with vllm_server(serve, served_name=Path(serve).name, log=run / "judge" / "vllm-server.log") as url:
                yield LLMJudge(rubric, Path(serve).name, base_url=url, cache_namespace=digest, **common)
        except ServeError as err:
            _fail(str(err))


@app.command("judge")
def judge_command(
    trajectories: Path = typer.Option(..., help="Trajectories to score (JSON lines)."),
    tasks: Path = typer.Option(..., help="Their task file (ground truth)."),
    out: Path = typer.Option(..., help="Verdict records (JSON lines)."),
    references: Path = typer.Option(None, help="Reference trajectories (e.g. the expert's), keyed by task."),
    config: Path = typer.Option(Path("configs/config.yaml"), help="Experiment config (its `judge` section)."),
    no_llm: bool = typer.Option(False, "--no-llm", help="Fact checker only, even if the config names a judge."),
    request_timeout: float = typer.Option(None, min=0.1, help=f"{REQUEST_TIMEOUT_HELP} Default: config's."),
    max_retries: int = typer.Option(None, min=0, help=f"{RETRIES_HELP} Default: config's."),
) -> None:
    """Score trajectories: LLM judge against the reference plus the fact checker, one reward each."""
    from terminus.config import run_dir
    from terminus.io import read_jsonl, write_jsonl_atomic
    from terminus.judge.scorer import Scorer, ScorerConfig, ScorerConfigError
    from terminus.tasks.record import TaskFileError, load_tasks

    cfg = override_endpoint_limits(_config(config), "judge", request_timeout, max_retries)
    try:
        task_map = {t.id: t for t in load_tasks(tasks)}
        records = read_jsonl(trajectories)
        refs = {r["task_id"]: r for r in read_jsonl(references)} if references else {}
        scorer_cfg = ScorerConfig.load(cfg["judge"]["scorer"])
    except (TaskFileError, FileNotFoundError, ScorerConfigError) as err:
        _fail(str(err))
    with _judge_from_config(cfg, run_dir(cfg), no_llm) as judge:
        scorer = Scorer(tasks=task_map, judge=judge, config=scorer_cfg, references=refs, group=cfg["judge"]["group"])
        try:
            verdicts = scorer.score(records)
        except KeyError as err:
            _fail(str(err))
    write_jsonl_atomic(out, verdicts)
    mean = sum(v["reward"] for v in verdicts) / max(1, len(verdicts))
    bad = sum(v["judge_unparseable"] for v in verdicts)
    typer.echo(f"{len(verdicts)} verdicts in {out}; mean reward {mean:.3f}; unparseable judge replies {bad}")


@app.command("judge-validity")
def judge_validity(
    trajectories: Path = typer.Option(..., help="The scripted expert's trajectories (from `tasks validate`)."),
    tasks: Path = typer.Option(..., help="Their task file."),
    out: Path = typer.Option(None, help="Report (default results/<run>/judge/validity.json)."),
    config: Path = typer.Option(Path("configs/config.yaml"), help="Experiment config (its `judge` section)."),
) -> None:
    """How often each scorer ranks a correct episode above a corrupted copy; LLM judge vs fact checker."""
    from terminus.config import run_dir, stamp
    from terminus.io import read_jsonl, write_json_atomic
    from terminus.judge.validity import validity_report
    from terminus.tasks.record import TaskFileError, load_tasks

    cfg = _config(config)
    out = out or run_dir(cfg) / "judge" / "validity.json"
    try:
        task_map = {t.id: t for t in load_tasks(tasks)}
        records = [r for r in read_jsonl(trajectories) if r.get("task_id") in task_map]
    except (TaskFileError, FileNotFoundError) as err:
        _fail(str(err))
    judge_cfg = cfg["judge"]
    note = ""
    if not judge_cfg.get("endpoint") and judge_cfg.get("serve"):
        note = (
            f"The LLM judge here is {judge_cfg['serve']}, a tiny local model served by vLLM: this run checks the "
            "plumbing end to end, and its LLM figures mean nothing. Configure judge.endpoint for a real judge; "
            "the same command then gives the real figure."
        )
    elif not judge_cfg.get("endpoint"):
        note = "No LLM judge configured (judge.endpoint and judge.serve are null): fact checker only."
    with _judge_from_config(cfg, run_dir(cfg)) as judge:
        report = validity_report(
            records, task_map, judge, llm_pairs=judge_cfg["validity_llm_pairs"], seed=cfg.get("seed", 0), note=note
        )
    report.update(stamp(cfg))
    write_json_atomic(out, report)
    typer.echo(json.dumps(report, indent=1))


PASS_THROUGH = {"allow_extra_args": True, "ignore_unknown_options": True, "help_option_names": []}


@app.command("sft", context_settings=PASS_THROUGH)
def sft_command(ctx: typer.Context) -> None:
    """SFT with TRL: `terminus sft --config configs/sft/tiny.yaml [--key value ...]` (flags override the recipe)."""
    from terminus.train.sft import main as sft_main
    from terminus.train.sft import parse

    if not ctx.args or ctx.args[0] in ("-h", "--help"):
        typer.echo("usage: terminus sft --config configs/sft/<recipe>.yaml [--key value ...]  (TRL SFTConfig keys)")
        raise typer.Exit(0)
    try:
        sft_main(*parse(ctx.args))
    except (FileNotFoundError, ValueError) as err:
        _fail(str(err))


@app.command("grpo", context_settings=PASS_THROUGH)
def grpo_command(ctx: typer.Context) -> None:
    """GRPO with TRL, rollouts in sandboxes: `terminus grpo --config configs/grpo/tiny.yaml [--key value ...]`."""
    from terminus.train.grpo import main as grpo_main
    from terminus.train.grpo import parse

    if not ctx.args or ctx.args[0] in ("-h", "--help"):
        typer.echo("usage: terminus grpo --config configs/grpo/<recipe>.yaml [--key value ...]  (TRL GRPOConfig keys)")
        raise typer.Exit(0)
    try:
        grpo_main(*parse(ctx.args))
    except (FileNotFoundError, ValueError) as err:
        _fail(str(err))


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
    """Merge, save and verify: same greedy tokens from transformers and vLLM on a fixed prompt."""
    from terminus.train.export import export

    if not model.is_dir():
        _fail(f"--model {model} does not exist")
    check = export(model, out, base=base, counts=counts, recipes=recipe, summary=summary, check_vllm=not no_vllm)
    typer.echo(f"exported to {out}; greedy transformers vs vLLM: {check['match']}")
    if check["match"] is False:
        _fail(f"vLLM and transformers disagree on the fixed prompt: {check}")


@app.command("training-summary")
def training_summary_command(
    tasks: Path = typer.Option(..., help="Validated task file (its test split is held out)."),
    base: str = typer.Option(..., help="Base model folder."),
    sft: str = typer.Option(..., help="SFT model folder."),
    grpo: str = typer.Option(..., help="GRPO model folder."),
    grpo_metrics: Path = typer.Option(..., help="GRPO's metrics.jsonl."),
    out: Path = typer.Option(..., help="summary.json to write."),
    config: Path = typer.Option(Path("configs/config.yaml"), help="Experiment config (for the stamp)."),
    max_turns: int = typer.Option(10, help="Turn limit, as at inference."),
    max_new_tokens: int = typer.Option(256, help="Tokens per turn."),
    concurrency: int = typer.Option(2, min=1, help="Episodes at once (batched together through each model)."),
    sandbox: str = typer.Option(None, help=f"Backend: {', '.join(BACKENDS)} (default: the config's `sandbox`)."),
) -> None:
    """Base vs SFT vs GRPO on held-out tasks (final-answer rate, fact recall) and GRPO's reward over steps."""
    from terminus.config import stamp
    from terminus.train.evaluate import training_summary

    cfg = _config(config)
    backend = _sandbox(sandbox, config)
    result = training_summary(
        tasks,
        {"base": base, "sft": sft, "grpo": grpo},
        grpo_metrics,
        out,
        stamp=stamp(cfg),
        max_turns=max_turns,
        max_new_tokens=max_new_tokens,
        concurrency=concurrency,
        backend=backend,
    )
    typer.echo(
        json.dumps(
            {k: v for k, v in result.items() if k != "grpo"}
            | {"grpo": {k: v for k, v in result["grpo"].items() if k != "reward_curve"}},
            indent=1,
        )
    )


@app.command("eval")
def eval_command(
    config: Path = typer.Option(Path("configs/config.yaml"), help="Experiment config (its `eval` section)."),
    tasks: Path = typer.Option(..., help="Validated task file."),
    out: Path = typer.Option(None, help="Folder (default results/<run>/eval): cells/, records.jsonl, summary.csv."),
    references: Path = typer.Option(None, help="Expert trajectories: the judge's references."),
    cell: list[str] = typer.Option(
        [], help="Run only this cell, <main>__<sub>__<bench>__<seed> (repeatable); `terminus eval-summary` merges."
    ),
    no_llm: bool = typer.Option(False, "--no-llm", help="Score the execution benchmark with the fact checker only."),
    request_timeout: float = typer.Option(None, min=0.1, help=f"{REQUEST_TIMEOUT_HELP} Default: config's."),
    max_retries: int = typer.Option(None, min=0, help=f"{RETRIES_HELP} Default: config's."),
    retry_failed: bool = typer.Option(True, "--retry-failed/--keep-failed", help=RETRY_FAILED_HELP),
    force: bool = typer.Option(False, help=FORCE_HELP),
    quiet: bool = typer.Option(False, help="No progress bar."),
) -> None:
    """Run grid cells (resumable), each with its subagent loaded or served once; without --cell, every cell and
    then per-cell metrics with bootstrap intervals and paired differences."""
    from terminus.collect.provenance import file_sha256
    from terminus.config import run_dir
    from terminus.eval.cells import CellError
    from terminus.eval.grid import check_models, run_cell, run_grid
    from terminus.io import read_jsonl
    from terminus.judge.scorer import Scorer, ScorerConfig
    from terminus.tasks.record import TaskFileError, load_tasks

    cfg = override_endpoint_limits(_config(config), "eval", request_timeout, max_retries)
    out = out or run_dir(cfg) / "eval"
    try:
        task_map = {t.id: t for t in load_tasks(tasks)}
        check_models(cfg["eval"], cell or None)
    except (TaskFileError, CellError) as err:
        _fail(str(err))
    inputs = {"config_hash": cfg["_hash"], "tasks_sha256": file_sha256(tasks), "no_llm": no_llm}
    resume = {"force": force, "retry_failed": retry_failed, "provenance": inputs}
    refs = {r["task_id"]: r for r in read_jsonl(references)} if references else {}
    with _judge_from_config(cfg, run_dir(cfg), no_llm) as judge:
        scorer = Scorer(tasks=task_map, judge=judge, config=ScorerConfig.load(cfg["judge"]["scorer"]), references=refs)
        try:
            if cell:
                for name in cell:
                    records = run_cell(cfg, tasks, out, scorer, name, show_progress=not quiet, resume=resume)
                    typer.echo(f"{len(records)} episodes in {out / 'cells' / (name + '.jsonl')}")
                return
            run_grid(cfg, tasks, out, scorer, show_progress=not quiet, resume=resume)
        except ValueError as err:
            _fail(str(err))
    _eval_summary(cfg, out)


@app.command("eval-summary")
def eval_summary_command(
    config: Path = typer.Option(Path("configs/config.yaml"), help="Experiment config (its `eval` section)."),
    out: Path = typer.Option(None, help="Eval folder (default results/<run>/eval) holding cells/."),
) -> None:
    """Merge the cells' records into records.jsonl and write summary.csv (per-cell metrics, intervals, pairs)."""
    from terminus.config import run_dir

    cfg = _config(config)
    _eval_summary(cfg, out or run_dir(cfg) / "eval")


def _eval_summary(cfg: dict, out: Path) -> None:
    from terminus.config import stamp
    from terminus.eval.grid import merge_cells
    from terminus.eval.metrics import summarise, write_csv

    try:
        records = merge_cells(cfg, out)
    except ValueError as err:
        _fail(str(err))
    rows = summarise(records, stamp(cfg))
    write_csv(rows, out / "summary.csv")
    typer.echo(f"{len(records)} episodes; {len(rows)} cells in {out / 'summary.csv'}")


@app.command("case-study")
def case_study_command(
    records: Path = typer.Option(..., help="results/<run>/eval/records.jsonl"),
    out: Path = typer.Option(..., help="case_study.json to write."),
    task: str = typer.Option(None, help="Task id (default: the largest saving at equal outcome)."),
    subagent: str = typer.Option("scripted", help="Which subagent's episode to set against No-Subagent."),
) -> None:
    """Serilog-style side by side: main-agent tokens, turns, terminal calls; the subagent's commands and summary."""
    from terminus.eval.case_study import case_study
    from terminus.io import read_jsonl, write_json_atomic

    try:
        study = case_study(read_jsonl(records), task, subagent)
    except (FileNotFoundError, ValueError) as err:
        _fail(str(err))
    write_json_atomic(out, study)
    typer.echo(json.dumps({k: v for k, v in study.items() if k != "with_subagent"}, indent=1))


from terminus.hosting import mcp_command, serve_command  # noqa: E402 - the commands that host the subagent

app.command("mcp")(mcp_command)
app.command("serve")(serve_command)


def main() -> None:  # pragma: no cover
    sys.exit(app())


if __name__ == "__main__":  # pragma: no cover
    main()
