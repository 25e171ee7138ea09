"""Two runs of one seed compared table by table, wall-clock aside (`make reproduce-check`, the determinism test),
and a run compared with the committed tables it should reproduce (`compare_cached`: CI, after the smoke DAG).

What counts as wall-clock: fields whose name says they measure time (`duration_s`, `train_runtime`,
`generated_tokens_per_s`, ...), timing text inside strings (`terminus.timing`), and the run folder's absolute
path. Caches (`is_cache`) are left out. Everything else must be identical to the byte once these are normalised.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import re
from pathlib import Path

from terminus.timing import normalise_timing

WALL_CLOCK = "<wall-clock>"
# Field names that hold a measured time, a rate over time, or dollars of GPU time (eval's `gpu_s`, `gpu_cost_usd`,
# and `cost_usd` and `cost_per_resolved_usd`, which hold them: `token_cost_usd` alone repeats), with their
# `_lo`/`_hi`/`_diff` and both-resolved columns.
_TIME_KEY = re.compile(
    r"duration|runtime|elapsed|wall|timestamp|per_second|per_s$|_s$|_seconds$|^time$|_time$|^time_|_at$|^started|"
    r"^finished|^gpu_|(?<!token_)cost_usd|cost_per_resolved",
    re.I,
)
TABLE_SUFFIXES = (".json", ".jsonl", ".csv", ".tsv", ".txt", ".yaml")
# What `scripts/cache_results.py` adds to each committed table: which config, commit and run made it. A table that
# reproduces the committed one at a later commit differs from it only there.
STAMPS = frozenset({"config_hash", "git_commit", "run", "machine"})
# A path into a run folder, wherever the checkout was: the committed tables name the folder of the run that made
# them (judge/validity.json's note names the served judge model), a fresh run its own.
RUN_PATH = re.compile(r"(?<![\w./-])/(?:[\w.+-]+/)*?(?=results/)")
BINARY_SUFFIXES = (".arrow", ".safetensors")


def is_cache(rel: Path) -> bool:
    """Caches are not results: the judge's call cache is keyed by the served model's path, and `datasets` names
    its map caches (`cache-<fingerprint>.arrow`) by a fingerprint that differs between two folders."""
    return "cache" in rel.parts[:-1] or rel.name.startswith("cache-")


def is_wall_clock(key: str) -> bool:
    return bool(_TIME_KEY.search(key))


def normalise(value, root: str | re.Pattern | None = None, drop: frozenset[str] = frozenset()):
    """A JSON value with wall-clock fields and timing text replaced, `root` (a run folder's checkout, or a pattern
    of checkouts ending in `/`) made relative, and the keys in `drop` left out at every depth."""
    if isinstance(value, dict):
        return {
            k: WALL_CLOCK if is_wall_clock(k) else normalise(v, root, drop) for k, v in value.items() if k not in drop
        }
    if isinstance(value, list):
        return [normalise(v, root, drop) for v in value]
    if isinstance(value, str):
        if isinstance(root, re.Pattern):
            value = root.sub("<root>/", value)
        elif root:
            value = value.replace(root, "<root>")
        return normalise_timing(value)
    return value


def table_lines(path: Path, root: str | re.Pattern | None = None, drop: frozenset[str] = frozenset()) -> list[str]:
    """A table as normalised lines: JSON and JSON lines record by record, CSV/TSV with time columns blanked;
    fields (keys, columns) named in `drop` left out."""
    text = path.read_text(errors="replace")
    if path.suffix == ".json":
        try:
            return json.dumps(normalise(json.loads(text), root, drop), indent=1, sort_keys=True).splitlines()
        except json.JSONDecodeError:
            pass
    if path.suffix == ".jsonl":
        out = []
        for line in text.splitlines():
            try:
                out.append(json.dumps(normalise(json.loads(line), root, drop), sort_keys=True))
            except json.JSONDecodeError:
                out.append(line)
        return out
    if path.suffix in (".csv", ".tsv"):
        rows = list(csv.reader(io.StringIO(text), delimiter="\t" if path.suffix == ".tsv" else ","))
        if not rows:
            return []
        kept = [i for i, name in enumerate(rows[0]) if name not in drop]
        timed = {i for i in kept if is_wall_clock(rows[0][i])}
        return [
            ",".join(WALL_CLOCK if i in timed and r else normalise(row[i], root) for i in kept if i < len(row))
            for r, row in enumerate(rows)
        ]
    return [normalise(line, root) for line in text.splitlines()]


def file_hash(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def compare_file(
    a: Path,
    b: Path,
    root_a: str | re.Pattern | None = None,
    root_b: str | re.Pattern | None = None,
    drop: frozenset[str] = frozenset(),
) -> dict | None:
    """None when the two are the same (after normalising, `drop`'s fields aside), else where they first differ."""
    if a.suffix in BINARY_SUFFIXES:
        ha, hb = file_hash(a), file_hash(b)
        return None if ha == hb else {"line": None, "a": f"sha256 {ha[:16]}", "b": f"sha256 {hb[:16]}"}
    la, lb = table_lines(a, root_a, drop), table_lines(b, root_b, drop)
    for n, (x, y) in enumerate(zip(la, lb, strict=False), start=1):
        if x != y:
            return {"line": n, "a": x[:400], "b": y[:400]}
    if len(la) != len(lb):
        n = min(len(la), len(lb)) + 1
        return {
            "line": n,
            "a": (la[n - 1] if len(la) >= n else "<end of file>")[:400],
            "b": (lb[n - 1] if len(lb) >= n else "<end of file>")[:400],
        }
    return None


def compared_files(run: Path, parts: tuple[str, ...]) -> list[str]:
    """The tables (and binary model/dataset files) of a run folder under `parts`, relative to the run folder."""
    out = []
    for part in parts:
        target = run / part
        files = [target] if target.is_file() else sorted(p for p in target.rglob("*") if p.is_file())
        for p in files:
            rel = p.relative_to(run)
            if p.suffix in TABLE_SUFFIXES + BINARY_SUFFIXES and ".tmp" not in p.name and not is_cache(rel):
                out.append(str(rel))
    return out


def compare_runs(a: Path, b: Path, parts: tuple[str, ...], names: list[str] | None = None) -> dict:
    """{"identical": [paths], "differing": [{"path", "line", "a", "b"}]}, paths relative to the run folders: the
    files of `parts` either run has, or only `names`."""
    a, b = Path(a), Path(b)
    names = sorted(names if names is not None else set(compared_files(a, parts)) | set(compared_files(b, parts)))
    return compare_tables(a, b, names, str(a.resolve().parent.parent), str(b.resolve().parent.parent))


def compare_tables(
    a: Path,
    b: Path,
    names: list[str],
    root_a: str | re.Pattern | None,
    root_b: str | re.Pattern | None,
    drop: frozenset[str] = frozenset(),
) -> dict:
    """Each of `names` under `a` against the same under `b` (`compare_file`); a table either side lacks differs,
    its side saying `missing`."""
    identical, differing = [], []
    for name in names:
        pa, pb = a / name, b / name
        if not (pa.is_file() and pb.is_file()):
            side = {"a": "present" if pa.is_file() else "missing", "b": "present" if pb.is_file() else "missing"}
            differing.append({"path": name, "line": None, **side})
            continue
        diff = compare_file(pa, pb, root_a, root_b, drop)
        if diff is None:
            identical.append(name)
        else:
            differing.append({"path": name, **diff})
    return {"identical": identical, "differing": differing}


def is_run_folder(folder: Path) -> bool:
    """A run folder (`results/<run>/`, every output) rather than a folder of committed tables (`results/cached/`)."""
    return (Path(folder) / "tasks" / "tasks.jsonl").is_file()


def compare_cached(run: Path, cached: Path, tables: tuple[str, ...] | None = None) -> dict:
    """A run's tables against the committed ones (`results/cached/`, as `scripts/cache_results.py` wrote them):
    {"identical": [paths], "differing": [{"path", "line", "a", "b"}]}, `a` the run's side, `b` the cached one.

    Compared: `tables` (default: the files the cache holds, `terminus.analysis.notebook.FILES`), wall-clock aside as in
    `compare_runs`, the stamps (`STAMPS`) aside at every depth, and any path into a `results/` folder read relative to
    its checkout. A table either side lacks differs (its side says `missing`)."""
    from terminus.analysis.notebook import FILES

    return compare_tables(Path(run), Path(cached), sorted(tables or FILES.values()), RUN_PATH, RUN_PATH, STAMPS)
