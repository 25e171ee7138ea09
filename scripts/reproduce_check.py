"""`make reproduce-check`: the smoke DAG twice from scratch, in two copies of this working tree, then every table
of the two run folders compared (wall-clock aside: `terminus.reproducibility`).

With `--against DIR`, the DAG runs once, in one copy ("fresh"), and that run is compared with DIR: another run
folder (every table, as two copies are), or results/cached/ (only the tables it holds, the stamps config_hash,
git_commit and run aside). `--load cpu-hog --workers N` keeps N busy processes beside the DAG (stress-ng --cpu N where
installed, else Python loops): beside copy b in the two-copy mode (a runs on a quiet machine), beside the fresh run
with --against; so a loaded run against a quiet one costs one DAG with --against, two without.

Writes results/benchmarks/reproducibility.json: {"identical": [paths], "differing": [{"path", "line", "a", "b"}],
"load": {"kind": "none"} or {"kind": "cpu-hog", "workers": N}, "loaded_run", "against", ...}, paths relative to
the run folder (e.g. `training/summary.json`); `a` is copy a or the fresh run, `b` copy b or DIR. Exits 1 when
anything differs.

    python scripts/reproduce_check.py [--workdir DIR] [--keep] [--configfile F] [--run smoke]
        [--load none|cpu-hog] [--workers N] [--against results/cached|RUN_FOLDER]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from terminus.analysis.notebook import FILES  # noqa: E402
from terminus.config import git_commit  # noqa: E402
from terminus.determinism import result_stamp  # noqa: E402
from terminus.io import write_json_atomic  # noqa: E402
from terminus.reproducibility import compare_cached, compare_runs, compared_files, is_run_folder  # noqa: E402

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


def hog_command(workers: int) -> list[list[str]]:
    """The processes of a CPU hog of `workers` busy loops: one stress-ng where installed, else one Python loop each."""
    if stress := shutil.which("stress-ng"):
        return [[stress, "--cpu", str(workers), "--quiet"]]
    return [[sys.executable, "-c", "while True: pass"] for _ in range(workers)]


@contextlib.contextmanager
def cpu_hog(workers: int) -> Iterator[list[subprocess.Popen]]:
    """`workers` busy loops for as long as the block runs; each started in its own session and stopped by its
    process group (stress-ng forks its workers), whatever ends the block."""
    procs = [
        subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        for cmd in hog_command(workers)
    ]
    try:
        yield procs
    finally:
        for proc in procs:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


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
    ap.add_argument(
        "--target",
        help="Run the DAG only up to this output (e.g. results/smoke/sft-data; default: all); with --against, "
        "only the tables that run made are compared.",
    )
    ap.add_argument("--out", type=Path, default=ROOT / "results" / "benchmarks" / "reproducibility.json")
    ap.add_argument("--load", choices=("none", "cpu-hog"), default="none", help="What else keeps the machine busy.")
    ap.add_argument("--workers", type=int, default=os.cpu_count() or 1, help="Busy loops of --load cpu-hog.")
    ap.add_argument("--against", type=Path, help="Run the DAG once and compare it with this run or cached folder.")
    args = ap.parse_args()
    if args.workers < 1:
        ap.error(f"--workers must be at least 1 (got {args.workers})")
    if args.against and not args.against.is_dir():
        ap.error(f"--against {args.against}: no such folder")
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="terminus-repro-"))
    load = {"kind": "cpu-hog", "workers": args.workers} if args.load == "cpu-hog" else {"kind": "none"}
    copies = ("fresh",) if args.against else ("a", "b")
    loaded = copies[-1] if args.load != "none" else None  # a quiet copy a against a loaded b
    walls = {}
    for name in copies:
        copy = workdir / name
        done = copy / (args.target or f"results/{args.run}/eval/summary.csv")
        if not done.exists():  # resumes a killed check
            copy_tree(copy)
            print(f"[{name}] running the DAG in {copy}" + (f" beside a {load}" if name == loaded else ""), flush=True)
            with cpu_hog(args.workers) if name == loaded else contextlib.nullcontext():
                walls[name] = round(run_dag(copy, args.configfile, workdir / f"{name}.log", args.target), 1)
    runs = [workdir / name / "results" / args.run for name in copies]
    # A run up to --target has only part of the tables: those are compared, not the ones it did not make.
    made = compared_files(runs[0], PARTS) if args.target and args.against else None
    if args.against is None:
        result = compare_runs(*runs, PARTS)
    elif is_run_folder(args.against):
        result = compare_runs(runs[0], args.against, PARTS, made)
    else:  # results/cached: only its tables, stamps aside
        result = compare_cached(runs[0], args.against, made and tuple(t for t in FILES.values() if t in made))
    result["parts"] = list(PARTS)
    result["target"] = args.target or "all"
    result["against"] = str(args.against) if args.against else None
    result["load"] = load
    result["loaded_run"] = loaded
    result["wall_s"] = walls
    result["git_commit"] = git_commit()
    result["stamp"] = result_stamp()
    write_json_atomic(args.out, result)
    print(f"{len(result['identical'])} identical, {len(result['differing'])} differing -> {args.out}")
    for diff in result["differing"][:20]:
        print(f"  {diff['path']} line {diff['line']}:\n    a: {diff['a'][:160]}\n    b: {diff['b'][:160]}")
    if not result["differing"] and not args.keep:
        shutil.rmtree(workdir, ignore_errors=True)
    return 1 if result["differing"] else 0


if __name__ == "__main__":
    sys.exit(main())
