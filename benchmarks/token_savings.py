"""Main-agent tokens and resolve rate of the `reader` main agent with subagents of different quality.

The reader acts only on what it hears (see terminus.mainagent.reader), so a subagent's answers move both its
tokens and its resolve rate. Subagents: `none` (No-Subagent: the reader runs everything itself), `scripted` (the
deterministic expert), `silent` (runs the expert's commands but answers nothing: the reader must rerun them),
and `tiny-base`, a model subagent: the untrained tiny Qwen3-architecture model that `terminus tiny-model` builds
(no trained smoke model is committed; with `--models DIR` the smoke run's base/sft-merged/export folders found
under DIR are used too). Every repair task of the test split is solved by each and verified in a fresh sandbox.

Targets: scripted tokens <= 0.6x of none at resolve >= none's; the silent subagent shows a lower resolve rate or
>= 1.5x the scripted subagent's tokens. Writes results/benchmarks/token_savings.json:
{"main_agent": "reader", "ratio": <scripted/none tokens>, "resolve_with": <scripted>, "resolve_without": <none>,
 "by_subagent": {name: {"tokens": <mean per task>, "resolve", "direct_terminal_calls", "rerun_rate"}}}

    python benchmarks/token_savings.py [--repos 12] [--models results/smoke/models]
"""

from __future__ import annotations

import argparse
import json
import logging
import shutil
import statistics
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import yaml

from benchmark_result import write_result
from terminus.eval.grid import verify
from terminus.eval.metrics import rerun_rate
from terminus.mainagent.harness import run_main_agent
from terminus.mainagent.reader import ReaderMainAgent
from terminus.mainagent.tokens import TokenCounter
from terminus.models import make_policy
from terminus.runspec import load_run
from terminus.sandbox.spec import SandboxSpec
from terminus.settings import TURN_LIMIT
from terminus.tasks.build import build_corpus
from terminus.tasks.record import load_tasks

log = logging.getLogger("token_savings")
TURNS = TURN_LIMIT


class SilentSubagent:
    """The expert's commands, no information back: its final answer is empty."""

    name = "silent"

    def __init__(self) -> None:
        self.expert = make_policy("scripted")

    def respond(self, messages: list[dict], tools: list[dict], tool_choice: str | None = None) -> dict:
        reply = self.expert.respond(messages, tools, tool_choice=tool_choice)
        if "<final_answer>" in (reply.get("content") or ""):
            return {"content": "<final_answer>\n</final_answer>"}
        return reply


def episode(task, tasks_file: Path, policy, counter: TokenCounter) -> dict:
    result, tree = run_main_agent(
        ReaderMainAgent(), task, tasks_file, sandbox=SandboxSpec(), subagent_policy=policy, subagent_turns=TURNS,
        counter=counter,
    )  # fmt: skip
    try:
        resolved = verify(task, tree, SandboxSpec()) if result.error is None else False
    finally:
        shutil.rmtree(tree.parent, ignore_errors=True)
    return {
        "task_id": task.id,
        "tokens": result.tokens,
        "resolved": float(resolved),
        "direct_terminal_calls": result.direct_terminal_calls,
        "rerun_rate": rerun_rate(result.subagent_episodes, result.direct_commands),
        "error": result.error,
    }


def summary(runs: list[dict]) -> dict:
    rates = [r["rerun_rate"] for r in runs if r["rerun_rate"] is not None]
    return {
        "tokens": round(statistics.fmean(r["tokens"] for r in runs), 1),
        "resolve": round(statistics.fmean(r["resolved"] for r in runs), 4),
        "direct_terminal_calls": round(statistics.fmean(r["direct_terminal_calls"] for r in runs), 4),
        "rerun_rate": round(statistics.fmean(rates), 4) if rates else None,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repos", type=int, default=12, help="repositories per language")
    parser.add_argument("--models", type=Path, help="a smoke run's models/ folder (base, sft-merged, export)")
    parser.add_argument("--concurrency", type=int, default=2)
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        raw = {
            "run": "token-savings",
            "tasks": {
                "synthetic": {"repos_per_language": args.repos, "variants": ["fail"]},
                "registry": {"enabled": False},
            },
        }
        (root / "config.yaml").write_text(yaml.safe_dump(raw))
        build_corpus(load_run(root / "config.yaml"), root / "tasks.jsonl", show_progress=False)
        tasks = [t for t in load_tasks(root / "tasks.jsonl") if t.split == "test" and t.meta.get("fix")]
        tasks = [t for t in tasks if t.task_type == "test-execution"]
        models = {}
        if args.models:
            for name, folder in (("base", "base"), ("sft", "sft-merged"), ("grpo", "export")):
                if (args.models / folder / "config.json").is_file():
                    models[name] = args.models / folder
        if not models:
            from terminus.train.tiny import build_tiny_model

            models["tiny-base"] = build_tiny_model(root / "tiny-base")
        subagents = {"none": lambda: None, "scripted": lambda: make_policy("scripted"), "silent": SilentSubagent}
        for name, folder in models.items():
            subagents[name] = lambda folder=folder: make_policy("transformers", model=str(folder), max_new_tokens=160)
        counter = TokenCounter("qwen")
        by_subagent = {}
        for name, factory in subagents.items():
            workers = 1 if name in models else args.concurrency  # a model subagent is CPU-bound already
            policy = factory()
            with ThreadPoolExecutor(workers) as pool:
                runs = list(pool.map(lambda t, p=policy: episode(t, root / "tasks.jsonl", p, counter), tasks))
            by_subagent[name] = summary(runs)
            print(name, json.dumps(by_subagent[name]), flush=True)
    none, scripted = by_subagent["none"], by_subagent["scripted"]
    result = {
        "main_agent": "reader",
        "ratio": round(scripted["tokens"] / none["tokens"], 4),
        "resolve_with": scripted["resolve"],
        "resolve_without": none["resolve"],
        "by_subagent": by_subagent,
    }
    write_result("token_savings", result)


if __name__ == "__main__":
    main()
