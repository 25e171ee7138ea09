"""Judge validity: does each scorer rank a correct episode above a systematically corrupted copy of it?

The labelled set: the scripted expert's trajectories (whose answers the validate step found correct) and,
for each, every corruption that applies: wrong counts, an invented failure, a dropped command, a wrong
file:line, a padded rambling summary, a missing final answer. A pair counts as ranked right when the scorer
gives the correct episode a strictly higher score. Agreement: the share of pairs on which the LLM judge and the
fact checker prefer the same episode (an unparseable verdict prefers neither).
"""

from __future__ import annotations

import copy
import random
import re
from collections import defaultdict

from terminus.judge.llm import LLMJudge
from terminus.judge.scorer import Scorer

CORRUPTIONS = ("wrong_counts", "invented_failure", "dropped_command", "wrong_location", "padded", "missing_answer")
PADDING = (
    " Overall the run went through the usual stages of the toolchain, and it is worth noting that the output "
    "contained a number of informational lines which were reviewed carefully. The environment appeared to be "
    "configured in a standard way, and nothing unusual was observed in the general behaviour of the process, "
    "although of course one can never be fully certain without further investigation, which may or may not be "
    "useful depending on what the next steps of the overall task turn out to be."
)


def _edit_summaries(traj: dict, fn) -> dict | None:
    """Apply fn to the summaries; None when nothing changed (the corruption does not apply)."""
    out = copy.deepcopy(traj)
    changed = False
    for entry in out.get("final_answer") or []:
        new = fn(entry["summary"])
        if new != entry["summary"]:
            entry["summary"], changed = new, True
    return out if changed else None


def corrupt(traj: dict, kind: str, rng: random.Random) -> dict | None:
    if not traj.get("final_answer"):
        return None
    if kind == "wrong_counts":

        def bump(m: re.Match) -> str:
            return f"{int(m.group(1)) + rng.randint(1, 3)}{m.group(2)}"

        return _edit_summaries(traj, lambda s: re.sub(r"\b(\d+)( (?:passed|failed))", bump, s))
    if kind == "invented_failure":
        out = copy.deepcopy(traj)
        name = rng.choice(("test_rounding_of_totals", "test_concurrent_refresh", "test_locale_parsing"))
        out["final_answer"][-1]["summary"] += f" Also failing: tests/test_regressions.py::{name}."
        return out
    if kind == "dropped_command":
        if len(traj["final_answer"]) < 2:
            return None
        out = copy.deepcopy(traj)
        out["final_answer"].pop(rng.randrange(len(out["final_answer"])))
        return out
    if kind == "wrong_location":

        def shift(m: re.Match) -> str:  # far enough not to land on another true location
            return f"{m.group(1)}:{int(m.group(2)) + 97}"

        return _edit_summaries(traj, lambda s: re.sub(r"(\.\w+):(\d+)\b", shift, s))
    if kind == "padded":
        return _edit_summaries(traj, lambda s: s + PADDING)
    if kind == "missing_answer":
        out = copy.deepcopy(traj)
        out["final_answer"], out["termination"] = None, "turn_limit"
        return out
    raise ValueError(f"unknown corruption {kind!r}")


def labelled_pairs(trajectories: list[dict], seed: int = 0) -> list[tuple[str, dict, dict]]:
    rng = random.Random(seed)
    pairs = []
    for traj in trajectories:
        if traj.get("termination") != "final_answer":
            continue
        for kind in CORRUPTIONS:
            bad = corrupt(traj, kind, rng)
            if bad is not None:
                bad["id"] = f"{traj['id']}~{kind}"
                pairs.append((kind, traj, bad))
    return pairs


def _sign(x: float) -> int:
    return (x > 1e-9) - (x < -1e-9)


def validity_report(
    trajectories: list[dict],
    tasks: dict,
    judge: LLMJudge | None,
    *,
    llm_pairs: int | None = None,
    seed: int = 0,
    note: str = "",
) -> dict:
    references = {t["task_id"]: t for t in trajectories}
    facts_only = Scorer(tasks=tasks, references=references)
    pairs = labelled_pairs(trajectories, seed)
    if not pairs:
        raise ValueError("no trajectory with a final answer to corrupt")
    fc_diff, by_kind = [], defaultdict(lambda: [0, 0])
    for kind, good, bad in pairs:
        a, b = facts_only.score([good, bad])
        diff = a["reward"] - b["reward"]
        fc_diff.append(diff)
        by_kind[kind][0] += diff > 0
        by_kind[kind][1] += 1
    report = {
        "fact_checker": {
            "accuracy": round(sum(d > 0 for d in fc_diff) / len(pairs), 4),
            "n": len(pairs),
            "by_corruption": {k: round(v[0] / v[1], 4) for k, v in sorted(by_kind.items())},
        },
        "llm_judge": {"accuracy": None, "n": 0, "model": None},
        "agreement": None,
    }
    if judge is not None:
        chosen = list(range(len(pairs)))
        random.Random(seed).shuffle(chosen)
        chosen = sorted(chosen[: llm_pairs or len(pairs)])
        items = []
        for i in chosen:
            _, good, bad = pairs[i]
            query = tasks[good["task_id"]].query
            items += [(query, references[good["task_id"]], good), (query, references[good["task_id"]], bad)]
        results = judge.score_many(items)
        right, agree, unparseable = 0, 0, 0
        for n, i in enumerate(chosen):
            good, bad = results[2 * n], results[2 * n + 1]
            if good.unparseable or bad.unparseable:
                unparseable += 1
                llm = 0
            else:
                llm = _sign(good.score - bad.score)
            right += llm > 0
            agree += llm == _sign(fc_diff[i])
        report["llm_judge"] = {
            "accuracy": round(right / len(chosen), 4),
            "n": len(chosen),
            "model": judge.model,
            "unparseable_pairs": unparseable,
            "cache_hits": judge.hits,
        }
        report["agreement"] = round(agree / len(chosen), 4)
    if note:
        report["note"] = note
    return report
