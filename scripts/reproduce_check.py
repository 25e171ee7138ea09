"""`make reproduce-check`: the smoke DAG twice from scratch, in two copies of this working tree, then every table
of the two run folders compared (wall-clock aside: `terminus.reproducibility`).

Writes results/benchmarks/reproducibility.json: {"identical": [paths], "differing": [{"path", "line", "a", "b"}]},
paths relative to the run folder (e.g. `training/summary.json`). Exits 1 when anything differs.

    python scripts/reproduce_check.py [--workdir DIR] [--keep] [--configfile F] [--run smoke]
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from terminus.config import git_commit  # noqa: E402
from terminus.io import write_json_atomic  # noqa: E402
from terminus.reproducibility import compare_runs  # noqa: E402

# What must be the same: the corpus, the teacher's rollouts, the SFT data, the training evidence, the eval tables,
# and the models' weights on the way.
PARTS = ("tasks", "collect", "sft-data", "judge", "models", "export", "training/summary.json", "eval/summary.csv",
         "eval/records.jsonl")  # fmt: skip


def copy_tree(dest: Path) -> None:
    """The working tree as git sees it (tracked and untracked-not-ignored files): no results, no .venv."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        check=True,
        capture_output=True,
    ).stdout.split(b"\0")
    for name in filter(None, listed):
        src = ROOT / os.fsdecode(name)
        if src.is_file():
            target = dest / os.fsdecode(name)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, target)


def run_dag(copy: Path, configfile: str | None, log: Path, target: str | None) -> float:
    env = dict(os.environ, PYTHONPATH=str(copy / "src"), PATH=f"{ROOT / '.venv' / 'bin'}:{os.environ['PATH']}")
    env["TERMINUS_GIT_COMMIT"] = git_commit()  # the copies have no .git: their tables name the commit they copy
    cmd = ["snakemake", *([target] if target else []), "--workflow-profile", "workflow/profiles/local"]
    if configfile:
        cmd += ["--configfile", configfile]
    start = time.perf_counter()
    with log.open("w") as fh:
        done = subprocess.run(cmd, cwd=copy, env=env, stdout=fh, stderr=subprocess.STDOUT)
    if done.returncode:
        raise SystemExit(f"the smoke DAG failed in {copy} (exit {done.returncode}); see {log}")
    return time.perf_counter() - start


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--workdir", type=Path, help="Where the two copies go (default: a fresh temporary folder).")
    ap.add_argument("--configfile", help="A config to run instead of the default smoke config (path in the repo).")
    ap.add_argument("--run", default="smoke", help="The config's run name (the folder under results/).")
    ap.add_argument("--keep", action="store_true", help="Keep the two copies (default: removed when identical).")
    ap.add_argument("--target", help="Run the DAG only up to this output (e.g. results/smoke/sft-data; default: all).")
    ap.add_argument("--out", type=Path, default=ROOT / "results" / "benchmarks" / "reproducibility.json")
    args = ap.parse_args()
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="terminus-repro-"))
    walls = {}
    for name in ("a", "b"):
        copy = workdir / name
        done = copy / (args.target or f"results/{args.run}/eval/summary.csv")
        if not done.exists():  # resumes a killed check
            copy_tree(copy)
            print(f"[{name}] running the DAG in {copy}", flush=True)
            walls[name] = round(run_dag(copy, args.configfile, workdir / f"{name}.log", args.target), 1)
    result = compare_runs(workdir / "a" / "results" / args.run, workdir / "b" / "results" / args.run, PARTS)
    result["parts"] = list(PARTS)
    result["target"] = args.target or "all"
    result["wall_s"] = walls
    result["git_commit"] = git_commit()
    write_json_atomic(args.out, result)
    print(f"{len(result['identical'])} identical, {len(result['differing'])} differing -> {args.out}")
    for diff in result["differing"][:20]:
        print(f"  {diff['path']} line {diff['line']}:\n    a: {diff['a'][:160]}\n    b: {diff['b'][:160]}")
    if not result["differing"] and not args.keep:
        shutil.rmtree(workdir, ignore_errors=True)
    return 1 if result["differing"] else 0


if __name__ == "__main__":
    sys.exit(main())
