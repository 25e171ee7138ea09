"""Main-agent tokens with the scripted-expert subagent vs without it, replay main agent, over the test split.

The corpus is the smoke config's synthetic source with more repositories (so the test split holds enough
repair tasks); every repair task is solved twice on identical work (same plan of execution needs, as raw
commands or as subagent queries) and verified in a fresh sandbox. Target: ratio <= 0.6 at equal resolve rate
(the paper reports ~0.7). Writes results/benchmarks/token_savings.json:
{"ratio": <with/without main-agent tokens>, "resolve_with": x, "resolve_without": y, "n": <int>,
 "main_agent": "replay"}

    python benchmarks/token_savings.py [--repos 12]
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
from collections import defaultdict
from pathlib import Path

import yaml

from terminus.config import load_config
from terminus.eval.grid import run_grid
from terminus.judge.scorer import Scorer
from terminus.tasks.build import build_corpus
from terminus.tasks.record import load_tasks

OUT = Path(__file__).resolve().parents[1] / "results" / "benchmarks" / "token_savings.json"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repos", type=int, default=12, help="repositories per language")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        raw = {
            "run": "token-savings",
            "tasks": {
                "synthetic": {"repos_per_language": args.repos, "variants": ["fail"]},
                "registry": {"enabled": False},
            },
            "eval": {
                "benchmarks": ["repair"],
                "concurrency": 4,
                "subagents": [{"name": "none", "policy": "none"}, {"name": "scripted", "policy": "scripted"}],
            },
        }
        (root / "config.yaml").write_text(yaml.safe_dump(raw))
        config = load_config(root / "config.yaml")
        build_corpus(config, root / "tasks.jsonl", show_progress=False)
        tasks = {t.id: t for t in load_tasks(root / "tasks.jsonl")}
        records = run_grid(config, root / "tasks.jsonl", root / "eval", Scorer(tasks=tasks), show_progress=True)
    by = defaultdict(dict)
    for r in records:
        by[r["task_id"]][r["subagent"]] = r
    pairs = [(v["none"], v["scripted"]) for v in by.values() if "none" in v and "scripted" in v]
    without = sum(a["main_agent_tokens"] for a, _ in pairs)
    with_ = sum(b["main_agent_tokens"] for _, b in pairs)
    quiet = [(a, b) for a, b in pairs if not tasks[a["task_id"]].meta.get("verbose")]
    per_language = defaultdict(list)
    for a, b in pairs:
        per_language[a["language"]].append(b["main_agent_tokens"] / a["main_agent_tokens"])
    result = {
        "ratio": round(with_ / without, 4),
        "resolve_with": round(statistics.fmean(b["resolved"] for _, b in pairs), 4),
        "resolve_without": round(statistics.fmean(a["resolved"] for a, _ in pairs), 4),
        "n": len(pairs),
        "main_agent": "replay",
        "tokens_without": without,
        "tokens_with": with_,
        "median_task_ratio": round(
            statistics.median(b["main_agent_tokens"] / a["main_agent_tokens"] for a, b in pairs), 4
        ),
        "ratio_by_language": {k: round(statistics.fmean(v), 4) for k, v in sorted(per_language.items())},
        "direct_terminal_calls": {
            "without": statistics.fmean(a["direct_terminal_calls"] for a, _ in pairs),
            "with": statistics.fmean(b["direct_terminal_calls"] for _, b in pairs),
        },
        "ratio_quiet_repos": round(
            sum(b["main_agent_tokens"] for _, b in quiet) / sum(a["main_agent_tokens"] for a, _ in quiet), 4
        )
        if quiet
        else None,
        "n_quiet_repos": len(quiet),
        "tokenizer": "qwen",
    }
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
