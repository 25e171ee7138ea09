"""The verdict record's fields as its readers check them (`terminus.io.read_jsonl`): `sft-data --verdicts` and
`view --verdicts` read what `terminus judge` writes (`Scorer.verdict`). A module of its own so that readers need
not import the scorer and its judge."""

from __future__ import annotations

FIELDS = {
    "trajectory_id": (str, None),
    "task_id": (str, None),
    "dimensions": ({str: {"score": (float, None), "reason": (str, None)}}, None),
    "judge_score": (float, None),
    "judge_unparseable": bool,
    "fact_precision": (float, None),
    "fact_recall": (float, None),
    "hallucinated": ([str], None),
    "missing": ([str], None),
    "wrong": ([str], None),
    "reward": float,
    "judge": (dict, None),
}
REQUIRED = ("trajectory_id",)
