"""Judge validity: does each scorer rank a correct episode above a systematically corrupted copy of it?

The labelled set: the scripted expert's trajectories (whose answers the validate step found correct) and,
for each, every corruption that applies: wrong counts, an invented failure, a dropped command, a wrong
file:line, a padded rambling summary, a missing final answer; and the policy's real failure modes, which the fact
checker's own categories do not describe (ranking those alone was right by construction): an answer with no command
run, a trivial claim, tool-call markup in the answer, the facts stated where no output shows them, the wrong command
run. A pair counts as ranked right when the scorer gives the correct episode a strictly higher score. Agreement: the
share of pairs on which the LLM judge and the fact checker prefer the same episode (an unparseable verdict prefers
neither).

Corruptions test each scorer against the project's own idea of wrong; people's labels do not share it. A labels file
(configs/judge/labels/*.jsonl) holds one row a line: `task` (its id, language, source, repo, task_type, query and
facts), `candidate` and `reference` (trajectories), `label` (`correct`: the main agent can act on the candidate's
answer; `incorrect`: it cannot), `who` labelled it and `why`. Each scorer's verdict on a row is `correct` when it
scores the candidate at least PASS; its label agreement is the share of rows whose verdict is the label.
"""

from __future__ import annotations

import copy
import json
import random
import re
from collections import defaultdict
from pathlib import Path

from terminus.agent.parsing import render_final_answer
from terminus.config import ROOT
from terminus.errors import TerminusError
from terminus.io import read_jsonl
from terminus.judge.llm import LLMJudge
from terminus.judge.scorer import Scorer

CORRUPTIONS = (
    "wrong_counts",
    "invented_failure",
    "dropped_command",
    "wrong_location",
    "padded",
    "missing_answer",
    # what GRPO's policy really did (issue 40)
    "no_command",
    "trivial_claim",
    "tool_call_markup",
    "ungrounded_facts",
    "wrong_command",
)
LABELS = ROOT / "configs" / "judge" / "labels"
LABEL_FIELDS = ("task", "candidate", "reference", "label", "who", "why")
VERDICTS = ("correct", "incorrect")
PASS = 0.5  # a score at least this: the scorer finds the answer correct


class LabelError(TerminusError, ValueError):
    pass


MARKUP = '<tool_call>\n{"name": "run_in_terminal", "arguments": {"command": "cat README.md"}}\n</tool_call>'
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


def _answered(traj: dict) -> dict:
    """The trajectory's last message rewritten to its (edited) final answer, as the policy would have written it."""
    messages = traj["messages"]
    if messages and messages[-1].get("role") == "assistant" and not messages[-1].get("tool_calls"):
        messages[-1] = {**messages[-1], "content": render_final_answer(traj["final_answer"])}
    return traj


def _ran_instead(traj: dict, command: str, output: str) -> dict:
    """The trajectory with its last command replaced by `command`, which printed `output` and exited 0."""
    out = copy.deepcopy(traj)
    calls = [m for m in out["messages"] if m.get("role") == "assistant" and m.get("tool_calls")]
    outputs = [m for m in out["messages"] if m.get("role") == "tool"]
    arguments = json.dumps({"command": command, "timeout_ms": 30_000})
    calls[-1]["tool_calls"] = [
        {**calls[-1]["tool_calls"][0], "function": {"name": "run_in_terminal", "arguments": arguments}}
    ]
    outputs[-1]["content"] = f"{output}\n[exit code 0]"
    out["turns"][-1] = {**out["turns"][-1], "command": command, "exit_code": 0}
    return out


def corrupt(traj: dict, kind: str, rng: random.Random) -> dict | None:
    if not traj.get("final_answer"):
        return None
    if kind == "no_command":  # answered at once: nothing ran, the facts known from the corpus
        out = copy.deepcopy(traj)
        answer = [m for m in out["messages"][-1:] if m.get("role") == "assistant" and not m.get("tool_calls")]
        out["messages"] = [m for m in out["messages"] if m.get("role") in ("system", "user")] + answer
        out["turns"], out["format_errors"] = [], 0
        return out
    if kind == "trivial_claim":  # one true-sounding sentence in place of the facts (GRPO's 1/3 reward)
        out = copy.deepcopy(traj)
        for entry in out["final_answer"]:
            entry["summary"] = "The build succeeded."
        return _answered(out)
    if kind == "tool_call_markup":  # the policy wrote its next call where the answer goes
        out = copy.deepcopy(traj)
        out["final_answer"][-1]["summary"] += "\n" + MARKUP
        return _answered(out)
    if kind == "ungrounded_facts":  # the commands ran, but printed none of the facts the answer states
        out = copy.deepcopy(traj)
        for message in out["messages"]:
            if message.get("role") == "tool":
                message["content"] = "[exit code 0]"
        return out
    if kind == "wrong_command":  # `ls -R` ran in place of the build or tests; the answer states their facts anyway
        if not traj.get("turns"):
            return None
        outputs = [m["content"] for m in traj["messages"] if m.get("role") == "tool"]
        listing = outputs[0].rsplit("\n[exit code", 1)[0] if len(outputs) > 1 else "."
        out = _ran_instead(traj, "ls -R", listing)
        out["final_answer"][-1]["command"] = "ls -R"
        return _answered(out)
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
    labels: list[dict] | None = None,
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
    if labels:
        report["labels"] = label_agreement(labels, judge)
    if note:
        report["note"] = repo_relative(note)
    return report


def load_labels(folder: Path = LABELS) -> list[dict]:
    """Every row of the folder's *.jsonl files, checked; [] when there are none."""
    rows = []
    for path in sorted(Path(folder).glob("*.jsonl")):
        for n, row in enumerate(read_jsonl(path), 1):
            missing = [k for k in LABEL_FIELDS if not row.get(k)]
            if missing:
                raise LabelError(f"{path}:{n}: a label row needs {', '.join(missing)}")
            if row["label"] not in VERDICTS:
                raise LabelError(f"{path}:{n}: label {row['label']!r} is not one of {', '.join(VERDICTS)}")
            rows.append(row | {"file": repo_relative(str(path))})
    return rows


def label_agreement(rows: list[dict], judge: LLMJudge | None) -> dict:
    """Per scorer, the share of labelled rows whose verdict (score >= PASS) is the label; the LLM judge's only with
    a judge (an unparseable verdict agrees with no label). Each row's `task` is a Task (`tasks.record`)."""
    fc_agree, llm_agree, unparseable = 0, 0, 0
    for row in rows:
        task = row["task"]  # a Task, made by the caller (judge may not import tasks)
        candidate = row["candidate"] | {"task_id": task.id}
        scorer = Scorer(tasks={task.id: task}, references={task.id: row["reference"]})
        verdict = "correct" if scorer.score([candidate])[0]["reward"] >= PASS else "incorrect"
        fc_agree += verdict == row["label"]
        if judge is not None:
            judged = judge.score(task.query, row["reference"], candidate)
            unparseable += judged.unparseable
            llm = None if judged.unparseable else ("correct" if judged.score >= PASS else "incorrect")
            llm_agree += llm == row["label"]
    return {
        "n": len(rows),
        "files": sorted({row["file"] for row in rows}),
        "fact_checker": round(fc_agree / len(rows), 4),
        "llm_judge": None if judge is None else round(llm_agree / len(rows), 4),
        "llm_unparseable": unparseable if judge is not None else None,
    }


def repo_relative(text: str) -> str:
    """Paths under the repository (or the working folder the CLI resolved them from) named relative to it: a result
    names no folder of the machine that made it."""
    for base in sorted({str(ROOT), str(Path.cwd())}, key=len, reverse=True):
        text = text.replace(base.rstrip("/") + "/", "")
    return text
