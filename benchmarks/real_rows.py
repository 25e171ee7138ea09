"""Check the grader on a dataset of real rows in one command: per instance, the gold patch's and the empty patch's
grades and the validation outcome (kept, or the reason it is dropped, the environment's faults apart).

The grader agrees with a row when the gold patch resolves it, the empty patch does not, and validation keeps it.
Writes results/benchmarks/real_rows.json (or --out) and prints the summary.

    python benchmarks/real_rows.py --dataset rows.jsonl [--benchmark swebench-verified] [--sandbox bwrap]
        [--bind /home/me/venv] [--ids a,b] [--out file.json]
    python benchmarks/real_rows.py --fixtures      # the repo's own fixture rows (tests/data/swe/*.jsonl)

A row of a local dataset file may carry `repo_path` (a git repository with its base commit, relative to the file),
`test_cmd`, `log_parser` and `binds`; rows without `repo_path` need docker or apptainer and their images.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from benchmark_result import RESULTS, write_result
from terminus.io import write_text_atomic
from terminus.sandbox import SandboxSpec, default_backend
from terminus.swe.benchmarks import load_instances
from terminus.swe.record import GradeResult, RepairInstance
from terminus.swe.validate import ENVIRONMENT, drop_reason, grade_both

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "data" / "swe"
# Fixture rows planted to fail validation, each for its own reason: the grader agrees when they are dropped.
PLANTED = {
    "acme__ledger-102": "FAIL_TO_PASS names a test that passes at base",
    "acme__shapes-4": "the test command cannot start",
    "acme__shapes-5": "the environment imports the repository from outside the workspace",
}


def _grade(result: GradeResult) -> dict:
    return result.report() | {"outside_workspace": result.outside_workspace}


def check(inst: RepairInstance, dataset: str, spec: SandboxSpec, timeout_s: float) -> dict:
    start = time.perf_counter()
    row = {"instance_id": inst.instance_id, "dataset": dataset, "family": inst.family, "language": inst.language}
    try:
        empty, gold = grade_both(inst, spec, timeout_s)
    except Exception as err:  # the environment did not start: the row is still reported
        reason = f"{ENVIRONMENT} {type(err).__name__}: {err}"
        return row | {"gold": None, "empty": None, "kept": False, "reason": reason, "agrees": False}
    reason = drop_reason(empty, gold)
    return row | {
        "gold": _grade(gold),
        "empty": _grade(empty),
        "kept": reason is None,
        "reason": reason,
        "agrees": gold.resolved and not empty.resolved and reason is None,
        "seconds": round(time.perf_counter() - start, 2),
    }


def summary(rows: list[dict]) -> dict:
    dropped = [r for r in rows if not r["kept"]]
    environment = sum(r["reason"].startswith(ENVIRONMENT) for r in dropped)
    return {
        "instances": len(rows),
        "gold_resolved": sum(bool(r["gold"] and r["gold"]["resolved"]) for r in rows),
        "empty_unresolved": sum(bool(r["empty"] and not r["empty"]["resolved"]) for r in rows),
        "kept": len(rows) - len(dropped),
        "dropped": {"environment": environment, "instance": len(dropped) - environment},
        "agrees": sum(r["agrees"] for r in rows),
    }


def _fixture_datasets(scratch: Path) -> list[tuple[str, str | None]]:
    """The fixture repositories built under `scratch` (their rows name them relative to the file) and their rows."""
    sys.path.insert(0, str(ROOT))
    from tests.swe.repos import build_all

    build_all(scratch)
    datasets = []
    for path in sorted(FIXTURES.glob("*.jsonl")):
        shutil.copy(path, scratch / path.name)
        datasets.append((str(scratch / path.name), None))
    return datasets


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", help="rows in a SWE-bench-family schema (a local JSONL/JSON/CSV file)")
    parser.add_argument("--fixtures", action="store_true", help="the repo's own fixture rows, tests/data/swe/")
    parser.add_argument("--benchmark", default=None, help="configs/benchmarks/<name>.yaml for the rows")
    parser.add_argument("--sandbox", default=None, help="local, bwrap, docker, apptainer (default: bwrap if present)")
    parser.add_argument("--bind", action="append", default=[], help="a read-only host path for the tests (repeat)")
    parser.add_argument("--ids", default=None, help="comma-separated instance ids (default: all)")
    parser.add_argument("--timeout", type=float, default=1800.0, help="seconds per test run")
    parser.add_argument("--concurrency", type=int, default=2)
    parser.add_argument("--out", type=Path, default=None, help="default: results/benchmarks/real_rows.json")
    args = parser.parse_args()
    if bool(args.dataset) == bool(args.fixtures):
        parser.error("give --dataset FILE or --fixtures")
    backend = args.sandbox or default_backend()
    spec = SandboxSpec(backend, binds=tuple(args.bind))
    ids = [i for i in (args.ids or "").split(",") if i] or None
    with tempfile.TemporaryDirectory(prefix="terminus-real-rows-") as scratch:
        datasets = _fixture_datasets(Path(scratch)) if args.fixtures else [(args.dataset, args.benchmark)]
        todo = []
        for dataset, benchmark in datasets:
            name = "tests/data/swe/" + Path(dataset).name if args.fixtures else dataset
            todo += [(inst, name) for inst in load_instances(benchmark, dataset=dataset, ids=ids)]
        with ThreadPoolExecutor(max_workers=max(1, args.concurrency)) as pool:
            rows = list(pool.map(lambda job: check(job[0], job[1], spec, args.timeout), todo))
    result = {
        "setup": {
            "datasets": ["tests/data/swe/*.jsonl"] if args.fixtures else [args.dataset],
            "benchmark": args.benchmark,
            "sandbox": backend,
            "binds": args.bind,
            **({"planted_faults": PLANTED} if args.fixtures else {}),
        },
        "summary": summary(rows),
        "instances": rows,
    }
    if args.out:
        write_text_atomic(args.out, json.dumps(result, indent=1) + "\n")
        print(json.dumps(result["summary"], indent=1))
    else:
        write_result("real_rows", result, printed=result["summary"])
        print(f"wrote {RESULTS / 'real_rows.json'}")


if __name__ == "__main__":
    main()
