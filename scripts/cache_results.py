"""Copy the small tables of a run into results/cached/ (the committed reference), stamping each one with the
run's config hash and git commit where the table does not carry them yet (JSON files also with the machine), and
write the folder's stamp, `stamp.json`: commit, dirty, config hash, run, the machine the run was made on
(`terminus.determinism.machine`) and the sha256 of each table it stamps.

    python scripts/cache_results.py results/smoke results/cached
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import sys
from pathlib import Path

from terminus.analysis.notebook import FILES
from terminus.determinism import machine

STAMP_FILE = "stamp.json"

MAX_BYTES = 4 * 1024 * 1024


def main(run: Path, cached: Path) -> None:
    stamp_source = json.loads((run / FILES["training"]).read_text())
    stamp = {k: stamp_source[k] for k in ("config_hash", "git_commit", "run")}
    # The run's own machine (its training summary names it); this one's where an older run did not.
    made_on = stamp_source.get("machine") or machine()
    for rel in FILES.values():  # only the smoke run's tables: results/cached/learning/ is the learning runs'
        (cached / rel).unlink(missing_ok=True)
    total = 0
    for rel in FILES.values():
        src, dst = run / rel, cached / rel
        if not src.is_file():
            print(f"skipping {rel}: not in {run}")
            continue
        dst.parent.mkdir(parents=True, exist_ok=True)
        if src.suffix == ".json":
            data = json.loads(src.read_text())
            if isinstance(data, dict):
                data = {**data, **{k: v for k, v in (stamp | {"machine": made_on}).items() if k not in data}}
            dst.write_text(json.dumps(data, indent=1) + "\n")
        elif src.suffix == ".jsonl":
            rows = [json.loads(x) for x in src.read_text().splitlines() if x.strip()]
            dst.write_text(
                "".join(json.dumps({**r, **{k: v for k, v in stamp.items() if k not in r}}) + "\n" for r in rows)
            )
        elif src.suffix == ".csv":
            rows = list(csv.DictReader(src.open()))
            columns = list(rows[0]) + [k for k in stamp if k not in rows[0]] if rows else list(stamp)
            out = io.StringIO()
            writer = csv.DictWriter(out, fieldnames=columns)
            writer.writeheader()
            writer.writerows({**stamp, **r} for r in rows)
            dst.write_text(out.getvalue())
        total += dst.stat().st_size
    commit = stamp["git_commit"]
    folder_stamp = {
        "commit": commit.removesuffix("-dirty"),
        "dirty": commit.endswith("-dirty"),
        "config_hash": stamp["config_hash"],
        "run": stamp["run"],
        "machine": made_on,
        "tables": {
            rel: hashlib.sha256((cached / rel).read_bytes()).hexdigest()[:16]
            for rel in sorted(FILES.values())
            if (cached / rel).is_file()
        },
    }
    (cached / STAMP_FILE).write_text(json.dumps(folder_stamp, indent=1) + "\n")
    if total > MAX_BYTES:
        raise SystemExit(f"results/cached would hold {total} bytes (> {MAX_BYTES}): keep only small tables")
    print(f"results/cached: {total} bytes from {run} ({stamp})")


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]))
