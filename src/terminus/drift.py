"""A fresh run's tables against results/cached/ when another machine may have made them (`scripts/compare_cached.py`).

Why not byte for byte: the kernels torch runs on a CPU (ATen's AVX-512 or AVX2 code, oneDNN's ISA, MKL's path)
round differently on another x86 machine. SFT's first loss is 7.951068 on one, 7.951073 on another; 100 SFT steps
carry that to 1.1% of the eval loss; and once a trained model decodes, one flipped token makes every later one
differ: between the caches of e00dc9d and 6ae211b (the same code on two machines) 12 of the 18 SFT eval episodes
differ, 9 of them end otherwise, and GRPO's first sampled completions were other completions. So each field gets
the rule its origin allows, and `compare` says which it used:

- exact: what no float decides. The corpus and its counts, the rows (task set, steps), data counts and schedules
  (`num_tokens`, `learning_rate`), every field of an episode whose subagent is not trained (`scripted`, `none`, the
  untrained `base`), and every episode's `resolved` and `error` (the main agent's outcome, an infrastructure error).
- tolerance: SFT's curve, relative to the cached value, at 3x the largest drift seen between two machines (at least
  1%); its first logged step at 1e-3 (drift there: 4e-5). Any other float: 1e-4 relative, float noise only.
- intervals: what a trained model's generations decide. Rates with their n: 95% Wilson intervals must overlap; the eval
  summary's bootstrap intervals (`x_lo`, `x_hi`) must overlap where a trained arm has n >= 10 tasks; a GRPO metric's
  range over steps must overlap.
- not compared: wall clock (GPU time and the dollars it holds too), stamps (`reproducibility.STAMPS`), an episode
  of a trained subagent beyond its identity and outcome (its answer, commands and tokens count through the summary's
  intervals), and a trained arm's figures in a summary row of fewer than 10 tasks (the smoke's 3 repair tasks: no
  interval to compare).

On the machine that made the cache (equal `machine` stamps) every rule is exact: there the tables reproduce to the
byte (six smoke DAGs on one machine), so any difference is the code's.
"""

from __future__ import annotations

import csv
import io
import json
import math
from dataclasses import dataclass, field
from pathlib import Path

from terminus.reproducibility import RUN_PATH, STAMPS, WALL_CLOCK, is_wall_clock, normalise
from terminus.stats import wilson

TRAINED = frozenset({"sft", "grpo"})  # subagents whose weights carry the training's drift
DEFAULT_REL = 1e-4
# Below this many tasks a trained arm's summary has no interval worth the name (issue 45: no bootstrap below 10).
MIN_N = 10
FIRST_STEP_REL = 1e-3
# 3x the largest relative drift of each column between the two machines' caches (at least 1%): loss 0.33%, entropy
# 0.27%, mean_token_accuracy 0.25%, train_loss 0.06%, eval_loss 1.09%, eval_mean_token_accuracy 0.55%, eval_entropy
# 0.31%, grad_norm 3.5%.
SFT_REL = {
    "loss": 0.01,
    "entropy": 0.01,
    "mean_token_accuracy": 0.01,
    "train_loss": 0.01,
    "eval_loss": 0.033,
    "eval_mean_token_accuracy": 0.017,
    "eval_entropy": 0.01,
    "grad_norm": 0.105,
}
# Set by the data and the schedule, never by a float: exact in SFT's and GRPO's logs.
SCHEDULE = frozenset({"step", "epoch", "learning_rate", "num_tokens", "eval_num_tokens", "total_flos"})
GRPO_EXACT = frozenset({"step", "epoch", "learning_rate", "rollout/infra_failed_frac"})
RECORD_EXACT = frozenset(
    {"key", "task_id", "benchmark", "language", "source", "main_agent", "subagent", "seed", "schema", "resolved",
     "error"}
)  # fmt: skip
# Counts and the main agent's outcome: exact in every row of a CSV (with their _lo and _hi).
EXACT_COLUMNS = frozenset(
    {"n", "runs", "episodes", "n_tasks", "n_runs", "n_both_resolved", "resolve_rate", "resolve_rate_diff"}
)
# The columns that name a CSV row (the eval summary's cell, the non-inferiority table's comparison).
KEY_COLUMNS = ("main_agent", "subagent", "benchmark", "seed", "arm", "reference", "context")
EXACT = "exact"
NOT_COMPARED = "not compared"


@dataclass
class Verdict:
    """One table's comparison: what differs (empty: the same) and which rule each field met."""

    path: str
    problems: list[str] = field(default_factory=list)
    rules: dict[str, list[str]] = field(default_factory=dict)

    def rule(self, label: str, name: str) -> None:
        names = self.rules.setdefault(label, [])
        if name not in names:
            names.append(name)

    def fail(self, where: str, message: str) -> None:
        if f"{where}: {message}" not in self.problems:  # an interval fails once for its estimate, _lo and _hi
            self.problems.append(f"{where}: {message}")


def is_number(value) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def within(a: float, b: float, rel: float) -> bool:
    """`a` (the run's) within `rel` of `b` (the cache's), relative to the larger; 1e-12 absolute for zeros."""
    return abs(a - b) <= max(rel * max(abs(a), abs(b)), 1e-12)


def overlap(a: tuple[float, float], b: tuple[float, float]) -> bool:
    """Whether two intervals meet, give or take float noise (`DEFAULT_REL`: a one-point range of 1.0 meets 1.00001)."""
    slack = DEFAULT_REL * max(map(abs, (*a, *b)), default=0.0) + 1e-12
    return a[0] <= b[1] + slack and b[0] <= a[1] + slack


def shown(value) -> str:
    return repr(value[:120] if isinstance(value, str) else value)[:160]


def show(interval: tuple[float, float]) -> str:
    return f"[{interval[0]:.4g}, {interval[1]:.4g}]"


def compare_value(v: Verdict, where: str, name: str, a, b, rel: float | None, exact: bool, note: str = "") -> None:
    """One field under its rule: exact (ints and text always; floats where `exact` or `rel` is None), else `rel`."""
    floats = isinstance(a, float) or isinstance(b, float)
    if is_number(a) and is_number(b) and not exact and rel is not None and floats:
        v.rule(f"within {rel:g} relative{note}", name)
        if not within(float(a), float(b), rel):
            v.fail(where, f"{name} {a!r} against {b!r} (more than {rel:g} relative)")
        return
    v.rule(f"{EXACT}{note}", name)
    if a != b:
        v.fail(where, f"{name} {shown(a)} against {shown(b)} (exact)")


def compare_tree(
    v: Verdict, where: str, a, b, rel: float | None, exact: bool = False, name: str = "", note: str = ""
) -> None:
    """Nested JSON: the same keys and lengths, each leaf by `compare_value` (`note` added to its rule's label)."""
    if a == WALL_CLOCK or b == WALL_CLOCK:
        v.rule(f"{NOT_COMPARED} (wall clock)", name)
        return
    if isinstance(a, dict) and isinstance(b, dict):
        if set(a) != set(b):
            v.fail(where, f"keys {sorted(set(a) ^ set(b))[:8]} only one side has (exact)")
        for k in sorted(set(a) & set(b)):
            path, leaf = (f"{where}.{k}" if where else k), (f"{name}.{k}" if name else k)
            compare_tree(v, path, a[k], b[k], rel, exact, leaf, note)
    elif isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            v.fail(where, f"{len(a)} items against {len(b)} (exact)")
        for i, (x, y) in enumerate(zip(a, b, strict=False)):
            compare_tree(v, f"{where}[{i}]", x, y, rel, exact, name, note)
    else:
        compare_value(v, where or "value", name or "value", a, b, rel, exact, note)


def wall_clock_keys(v: Verdict, row: dict) -> None:
    for k, value in row.items():
        if value == WALL_CLOCK:
            v.rule(f"{NOT_COMPARED} (wall clock)", k)


# --- the tables ----------------------------------------------------------------------------------------------------


def compare_sft_metrics(v: Verdict, a: list[dict], b: list[dict], exact: bool) -> None:
    """SFT's log: the same rows (steps, fields); data and schedule exact; the curve within `SFT_REL` of the cache's,
    its first logged step within `FIRST_STEP_REL`."""
    if len(a) != len(b):
        v.fail("rows", f"{len(a)} log rows against {len(b)} (exact)")
    first = next((i for i, row in enumerate(b) if "loss" in row), 0)
    for i, (x, y) in enumerate(zip(a, b, strict=False)):
        where = f"step {y.get('step', i)}"
        wall_clock_keys(v, y)
        if set(x) != set(y):
            v.fail(where, f"fields {sorted(set(x) ^ set(y))} only one side has (exact)")
        for k in sorted(set(x) & set(y)):
            if x[k] == WALL_CLOCK:
                continue
            if k in SCHEDULE or exact:
                compare_value(v, where, k, x[k], y[k], None, True)
            elif i == first:
                compare_value(v, where, k, x[k], y[k], FIRST_STEP_REL, False, " (first logged step)")
            else:
                compare_value(v, where, k, x[k], y[k], SFT_REL.get(k, DEFAULT_REL), False)


def compare_grpo_metrics(v: Verdict, a: list[dict], b: list[dict], exact: bool) -> None:
    """GRPO's log: the same steps and fields, the schedule exact; every other figure comes from sampled completions,
    so its range over steps (min to max) must overlap the cache's. Not a t interval: the steps are no independent
    samples (KL and token counts accumulate; a run whose groups never differ in reward logs zeros throughout, as
    the cache of 6ae211b does, while e00dc9d's updated from step 6). A figure logged once is not compared."""
    if [r.get("step") for r in a] != [r.get("step") for r in b]:
        v.fail("steps", f"{[r.get('step') for r in a]} against {[r.get('step') for r in b]} (exact)")
    columns: dict[str, tuple[list, list]] = {}
    for x, y in zip(a, b, strict=False):
        where = f"step {y.get('step')}"
        wall_clock_keys(v, y)
        if set(x) != set(y):
            v.fail(where, f"fields {sorted(set(x) ^ set(y))} only one side has (exact)")
        for k in sorted(set(x) & set(y)):
            if x[k] == WALL_CLOCK:
                continue
            if k in GRPO_EXACT or exact or not (is_number(x[k]) and is_number(y[k])):
                compare_value(v, where, k, x[k], y[k], None, True)
            else:
                columns.setdefault(k, ([], []))
                columns[k][0].append(float(x[k]))
                columns[k][1].append(float(y[k]))
    for k, (xs, ys) in columns.items():
        if len(xs) < 2:
            v.rule(f"{NOT_COMPARED} (logged once, from sampled completions)", k)
            continue
        v.rule("ranges over steps overlap", k)
        if not overlap((min(xs), max(xs)), (min(ys), max(ys))):
            v.fail(k, f"range over steps {show((min(xs), max(xs)))} against {show((min(ys), max(ys)))} (no overlap)")


def compare_records(v: Verdict, a: list[dict], b: list[dict], exact: bool) -> None:
    """Eval episodes by key: the same task set; an untrained subagent's episodes exact; a trained one's identity
    and outcome (`RECORD_EXACT`) exact, the rest through the summary's intervals."""
    ka, kb = {r.get("key"): r for r in a}, {r.get("key"): r for r in b}
    if set(ka) != set(kb):
        v.fail("task set", f"keys only one side has: {sorted(set(ka) ^ set(kb), key=str)[:6]} (exact)")
    for key in sorted(set(ka) & set(kb), key=str):
        x, y = ka[key], kb[key]
        wall_clock_keys(v, y)
        if exact or y.get("subagent") not in TRAINED:
            compare_tree(v, str(key), x, y, None, True, note="" if exact else " (an untrained subagent: every field)")
            continue
        for k in sorted(set(x) | set(y)):
            if k in RECORD_EXACT:
                compare_value(v, str(key), k, x.get(k), y.get(k), None, True)
            elif y.get(k) != WALL_CLOCK:
                v.rule(f"{NOT_COMPARED} for a trained subagent (its eval/summary.csv intervals are)", k)


def _float(text: str) -> tuple[bool, float]:
    try:
        return True, float(text)
    except (TypeError, ValueError):
        return False, math.nan


def _keyed(rows: list[dict]) -> dict:
    """Rows by their `KEY_COLUMNS` (else their text cells); by position where two share a key."""
    names = [c for c in (rows[0] if rows else {}) if c in KEY_COLUMNS]

    def key(r: dict) -> tuple:
        return tuple(r[c] for c in names) if names else tuple(x for c, x in r.items() if not _float(x)[0])

    keyed = {key(r): r for r in rows}
    return keyed if len(keyed) == len(rows) else {(f"row {i + 1}",): r for i, r in enumerate(rows)}


def compare_csv(v: Verdict, a: list[dict], b: list[dict], exact: bool) -> None:
    """A table of rows keyed by `KEY_COLUMNS`: the same columns and rows; text and `EXACT_COLUMNS` exact; a number in
    a trained arm's row (its `subagent`, or a part of its `arm` name such as `reader__sft__full`, in `TRAINED`) with
    an interval (`x_lo`, `x_hi`, else the row's `lo`, `hi`) by overlapping intervals where the row has n >= `MIN_N`
    tasks (not compared below); any other number within 1e-4 relative; an empty cell only by one."""
    if a and b and list(a[0]) != list(b[0]):
        v.fail("columns", f"{sorted(set(a[0]) ^ set(b[0]))} only one side has, or in another order (exact)")
    ra, rb = _keyed(a), _keyed(b)
    if set(ra) != set(rb):
        v.fail("rows", f"rows only one side has: {sorted(set(ra) ^ set(rb), key=str)[:4]} (exact)")
    for key in [k for k in rb if k in ra]:
        x, y, where = ra[key], rb[key], "/".join(map(str, key))
        trained = any(part in TRAINED for arm in (y.get("subagent"), y.get("arm")) for part in str(arm).split("__"))
        n = _float(y.get("n", y.get("n_tasks")))[1]
        for col in y:
            if col in STAMPS or col not in x:
                continue
            if y[col] == WALL_CLOCK or is_wall_clock(col):
                v.rule(f"{NOT_COMPARED} (wall clock)", col)
                continue
            base = col.removesuffix("_lo").removesuffix("_hi")
            lo, hi = (f"{base}_lo", f"{base}_hi") if f"{base}_lo" in y else ("lo", "hi")
            (na, fa), (nb, fb) = _float(x[col]), _float(y[col])
            if not (na and nb) or exact or base in EXACT_COLUMNS or col in KEY_COLUMNS:
                v.rule(EXACT, col)
                if x[col] != y[col] and not (na and nb and fa == fb):
                    v.fail(where, f"{col} {x[col]!r} against {y[col]!r} (exact)")
            elif trained and n < MIN_N:
                v.rule(f"{NOT_COMPARED} (trained arm's row, n < {MIN_N}: no interval)", col)
            elif trained and all(_float(r.get(c))[0] for r in (x, y) for c in (lo, hi)):
                v.rule("95% intervals overlap (trained arm's row)", col)
                ia, ib = (float(x[lo]), float(x[hi])), (float(y[lo]), float(y[hi]))
                if not overlap(ia, ib):
                    v.fail(where, f"{base} {show(ia)} against {show(ib)} (intervals do not overlap)")
            else:
                v.rule(f"within {DEFAULT_REL:g} relative", col)
                if not within(fa, fb, DEFAULT_REL):
                    v.fail(where, f"{col} {x[col]} against {y[col]} (more than {DEFAULT_REL:g} relative)")


def compare_training_summary(v: Verdict, a: dict, b: dict, exact: bool) -> None:
    """Base/SFT/GRPO on held-out tasks: the untrained base exact; a trained model's counts exact, its rates by
    overlapping Wilson intervals at their n, GRPO's reward curve by its steps (exact) and its range;
    reward_first/last (two points of that curve) not compared."""
    if exact:
        compare_tree(v, "", a, b, None, True)
        return
    for k in sorted(set(a) | set(b)):
        x, y = a.get(k), b.get(k)
        if k not in TRAINED or not (isinstance(x, dict) and isinstance(y, dict)):
            compare_tree(v, k, x, y, DEFAULT_REL, False, k)
            continue
        for f in sorted(set(x) | set(y)):
            fx, fy, name = x.get(f), y.get(f), f"{k}.{f}"
            n_key = f"{f.split('_', 1)[0]}_n" if f"{f.split('_', 1)[0]}_n" in y else "n"
            if f == "reward_curve" and isinstance(fx, list) and isinstance(fy, list):
                compare_value(v, name, "reward_curve steps", [p[0] for p in fx], [p[0] for p in fy], None, True)
                v.rule("ranges over steps overlap", name)
                ia, ib = [(min(p[1] for p in c), max(p[1] for p in c)) if c else (0.0, 0.0) for c in (fx, fy)]
                if not overlap(ia, ib):
                    v.fail(name, f"reward over steps {show(ia)} against {show(ib)} (no overlap)")
            elif f in ("reward_first", "reward_last"):
                v.rule(f"{NOT_COMPARED} (one GRPO step; the curve is)", name)
            elif is_number(fx) and isinstance(fy, float) and 0 <= fy <= 1 and isinstance(y.get(n_key), int):
                if not 0 <= fx <= 1:
                    v.fail(name, f"{fx} is no rate (the cache's {fy} is)")
                    continue
                v.rule(f"95% Wilson intervals at {n_key} overlap", name)
                ia, ib = wilson(fx, x.get(n_key, 0)), wilson(fy, y[n_key])
                if not overlap(ia, ib):
                    v.fail(name, f"{fx} {show(ia)} against {fy} {show(ib)} (intervals do not overlap)")
            else:
                compare_tree(v, name, fx, fy, DEFAULT_REL, False, name)


def load(path: Path):
    """A table normalised as `reproducibility.normalise` does (wall clock marked, checkout paths relative, stamps
    dropped): JSON as its value, JSON lines as a list, CSV as a list of dicts (strings)."""
    text = path.read_text(errors="replace")
    if path.suffix == ".json":
        return normalise(json.loads(text), RUN_PATH, STAMPS)
    if path.suffix == ".jsonl":
        return [normalise(json.loads(line), RUN_PATH, STAMPS) for line in text.splitlines() if line.strip()]
    rows = list(csv.DictReader(io.StringIO(text)))
    return [
        {k: WALL_CLOCK if is_wall_clock(k) and val else val for k, val in r.items() if k not in STAMPS} for r in rows
    ]


SPECIFIC = {
    "models/sft/metrics.jsonl": compare_sft_metrics,
    "models/grpo/metrics.jsonl": compare_grpo_metrics,
    "eval/records.jsonl": compare_records,
    "training/summary.json": compare_training_summary,
}


def compare_file(a: Path, b: Path, rel: str, exact: bool) -> Verdict:
    """One table: its own rules (`SPECIFIC`), else CSV by `compare_csv`, else JSON (lines) leaf by leaf: ints and
    text exact, floats within 1e-4 relative."""
    v = Verdict(rel)
    try:
        x, y = load(a), load(b)
    except (json.JSONDecodeError, UnicodeDecodeError, csv.Error) as err:
        v.fail("file", f"unreadable: {err}")
        return v
    if rel in SPECIFIC:
        SPECIFIC[rel](v, x, y, exact)
    elif a.suffix == ".csv":
        compare_csv(v, x, y, exact)
    else:
        compare_tree(v, "", x, y, None if exact else DEFAULT_REL, exact)
    return v


def read_machine(folder: Path) -> dict | None:
    """The machine a results folder was made on: its training summary's `machine` stamp, else its `stamp.json`'s."""
    for rel in ("training/summary.json", "stamp.json"):
        try:
            found = json.loads((Path(folder) / rel).read_text()).get("machine")
        except (OSError, json.JSONDecodeError, AttributeError):
            continue
        if found:
            return found
    return None


def compare(run: Path, cached: Path, tables: list[str], mode: str = "auto") -> dict:
    """`tables` of `run` against `cached`: {"machines": (run's, cached's), "exact": bool, "verdicts": [Verdict]}.
    `mode`: exact, tolerant, or auto (exact when both machine stamps are present and equal)."""
    machines = (read_machine(run), read_machine(cached))
    exact = mode == "exact" or (mode == "auto" and machines[0] is not None and machines[0] == machines[1])
    verdicts = []
    for rel in tables:
        pa, pb = Path(run) / rel, Path(cached) / rel
        if not pa.is_file() and not pb.is_file():  # a table neither holds (results from before it existed)
            v = Verdict(rel)
            v.rule("absent from both: nothing to compare", "file")
            verdicts.append(v)
            continue
        if not (pa.is_file() and pb.is_file()):
            v = Verdict(rel)
            v.fail("file", f"run: {'present' if pa.is_file() else 'missing'}, cached: "
                           f"{'present' if pb.is_file() else 'missing'}")  # fmt: skip
            verdicts.append(v)
            continue
        verdicts.append(compare_file(pa, pb, rel, exact))
    return {"machines": machines, "exact": exact, "verdicts": verdicts}
