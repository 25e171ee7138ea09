"""How a corpus is cut into splits (by repository) and counted against the paper's task types.

Below both `tasks.build` (the synthetic and registry corpus) and `swe.corpus` (real repositories), so that neither
imports the other."""

from __future__ import annotations

import hashlib
import json
from collections import Counter

from terminus.errors import TerminusError
from terminus.tasks.record import SPLITS, Task

PAPER = {"test-execution": 2692, "error-diagnosis": 2166, "build/compile": 969, "dependency": 106}
SHORT = {"test-execution": "tests", "error-diagnosis": "diagnose", "build/compile": "build", "dependency": "deps"}


class CorpusError(TerminusError, ValueError):
    pass


def assign_splits(repos: list[str], shares: dict[str, float], seed: int) -> dict[str, str]:
    """Repository -> split. Repositories are ordered by a seeded hash and cut by the shares; with at least three
    repositories and positive shares, every split gets at least one."""
    total = sum(shares.get(s, 0) for s in SPLITS)
    if total <= 0:
        raise CorpusError("tasks.splits: the shares must add up to more than 0")
    ordered = sorted(set(repos), key=lambda r: hashlib.sha256(f"{seed}/{r}".encode()).hexdigest())
    n = len(ordered)
    counts = {s: round(n * shares.get(s, 0) / total) for s in SPLITS}
    if n >= 3:
        for s in SPLITS:
            if shares.get(s, 0) > 0 and counts[s] == 0:
                counts[s] = 1
    while sum(counts.values()) > n:
        largest = max(SPLITS, key=lambda s: counts[s])
        counts[largest] -= 1
    counts["train"] += n - sum(counts.values())
    result, i = {}, 0
    for s in SPLITS:
        for repo in ordered[i : i + counts[s]]:
            result[repo] = s
        i += counts[s]
    return result


def corpus_stats(tasks: list[Task]) -> dict:
    by_type = Counter(t.task_type for t in tasks)
    total = sum(PAPER.values())
    return {
        "tasks": len(tasks),
        "repos": len({t.repo for t in tasks}),
        "by_language": dict(sorted(Counter(t.language for t in tasks).items())),
        "by_source": dict(sorted(Counter(t.source for t in tasks).items())),
        "by_split": {s: sum(1 for t in tasks if t.split == s) for s in SPLITS},
        "by_type": {
            k: {
                "ours": by_type.get(k, 0),
                "ours_share": round(by_type.get(k, 0) / max(1, len(tasks)), 3),  # a selection that all dropped: 0
                "paper": v,
                "paper_share": round(v / total, 3),
            }
            for k, v in PAPER.items()
        },
    }


def format_stats(stats: dict) -> str:
    lines = [
        f"{stats['tasks']} tasks from {stats['repos']} repositories",
        "  by source: " + json.dumps(stats["by_source"]),
        "  by language: " + json.dumps(stats["by_language"]),
        "  by split: " + json.dumps(stats["by_split"]),
        f"  {'task type':<16}{'ours':>6}{'share':>8}{'paper':>8}{'share':>8}",
    ]
    for k, v in stats["by_type"].items():
        lines.append(f"  {k:<16}{v['ours']:>6}{v['ours_share']:>8.1%}{v['paper']:>8}{v['paper_share']:>8.1%}")
    return "\n".join(lines)
