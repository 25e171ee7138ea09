"""How long the smoke DAG takes, rule by rule, from one run: results/benchmarks/dag_times.json.

    python benchmarks/dag_times.py --execute      # run the whole smoke DAG afresh (--forceall), then read its log
    python benchmarks/dag_times.py --log PATH     # read a finished run's Snakemake log instead

Each job's time is from the line that starts it to the line that finishes it in Snakemake's own log (to the second),
so every rule has a figure, not only those with a `benchmark:` directive; jobs run two at a time on 2 cores, so the
rules' sum exceeds the run's wall time (`total_s`, from Snakemake's "Elapsed time"). The README's time figure comes
from here (`scripts/readme_results.py`)."""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import time
from collections import defaultdict
from datetime import datetime
from pathlib import Path

from benchmark_result import write_result
from terminus.config import git_commit
from terminus.determinism import machine

ROOT = Path(__file__).resolve().parents[1]
STAMP = re.compile(r"^\[(\w{3} \w{3}\s+\d+ \d\d:\d\d:\d\d \d{4})\]$")
START = re.compile(r"^(?:local)?rule (\w+):$")
JOBID = re.compile(r"^\s+jobid: (\d+)$")
FINISHED = re.compile(r"^Finished jobid: (\d+) \(Rule: (\w+)\)$")
ELAPSED = re.compile(r"^Elapsed time: (?:(\d+) days?, )?(\d+):(\d\d):(\d\d(?:\.\d+)?)$")


def parse_log(text: str) -> dict:
    """Per job (rule, seconds) and the run's elapsed seconds, from a Snakemake log."""
    now, pending, started, jobs, elapsed = None, None, {}, [], None
    for line in text.splitlines():
        if m := STAMP.match(line):
            now = datetime.strptime(" ".join(m.group(1).split()), "%a %b %d %H:%M:%S %Y")
        elif m := START.match(line):
            pending = m.group(1)
        elif (m := JOBID.match(line)) and pending:
            started[m.group(1)] = (pending, now)
            pending = None
        elif m := FINISHED.match(line):
            rule, begin = started.pop(m.group(1), (m.group(2), None))
            if begin is not None and now is not None:
                jobs.append({"rule": rule, "jobid": int(m.group(1)), "s": (now - begin).total_seconds()})
        elif m := ELAPSED.match(line.strip()):
            days, h, mnt, sec = m.groups()
            elapsed = int(days or 0) * 86400 + int(h) * 3600 + int(mnt) * 60 + float(sec)
    if started:
        raise SystemExit(f"the log has jobs that never finished: {sorted(r for r, _ in started.values())}")
    return {"jobs": jobs, "elapsed_s": elapsed}


def summarise(parsed: dict) -> dict:
    rules: dict[str, dict] = defaultdict(lambda: {"jobs": 0, "sum_s": 0.0, "max_s": 0.0})
    for job in parsed["jobs"]:
        r = rules[job["rule"]]
        r["jobs"] += 1
        r["sum_s"] += job["s"]
        r["max_s"] = max(r["max_s"], job["s"])
    order = sorted(rules, key=lambda k: -rules[k]["sum_s"])
    return {
        k: {"jobs": rules[k]["jobs"], "sum_s": round(rules[k]["sum_s"], 1), "max_s": rules[k]["max_s"]} for k in order
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--execute", action="store_true", help="Run the smoke DAG afresh (--forceall) first.")
    parser.add_argument("--log", type=Path, help="A finished run's .snakemake/log/*.snakemake.log.")
    args = parser.parse_args()
    if args.execute:
        start = time.perf_counter()
        before = set((ROOT / ".snakemake" / "log").glob("*.snakemake.log"))
        snakemake = Path(sys.executable).parent / "snakemake"
        command = [str(snakemake), "--workflow-profile", "workflow/profiles/local", "--forceall"]
        subprocess.run(
            command, cwd=ROOT, check=True, env=os.environ | {"PATH": f"{snakemake.parent}:{os.environ['PATH']}"}
        )
        wall = time.perf_counter() - start
        logs = sorted(set((ROOT / ".snakemake" / "log").glob("*.snakemake.log")) - before)
        if not logs:
            raise SystemExit("snakemake wrote no log")
        log = logs[-1]
    elif args.log:
        log, wall = args.log, None
    else:
        parser.error("give --execute or --log")
    parsed = parse_log(Path(log).read_text())
    result = {
        "what": "the smoke DAG (make demo's targets), every job from its start line to its finish line in "
        "Snakemake's log; jobs overlap on the cores, so the rules' sums exceed total_s",
        "cores": os.cpu_count(),
        "cpu": machine()["cpu"],
        "total_s": parsed["elapsed_s"] if parsed["elapsed_s"] is not None else wall,
        "rules": summarise(parsed),
        "git_commit": git_commit(),
    }
    write_result("dag_times", result)


if __name__ == "__main__":
    main()
