"""Atomic writes: a temporary file in the same folder, fsynced, then renamed. Readers never see half a file,
and a kill at any moment leaves the previous version intact; JSON-lines logs grow by whole lines only. (No room's
code: every room may use it.)"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path


def write_text_atomic(path: Path | str, text: str) -> None:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_json_atomic(path: Path | str, payload: dict) -> None:
    write_text_atomic(path, json.dumps(payload, ensure_ascii=False, indent=1))


def write_jsonl_atomic(path: Path | str, records: list[dict]) -> None:
    write_text_atomic(path, "".join(json.dumps(r, ensure_ascii=False, sort_keys=True) + "\n" for r in records))


def read_jsonl(path: Path | str) -> list[dict]:
    """Every record of a JSON-lines file; a missing file or a broken line is an error naming the file and line."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{path} does not exist")
    records = []
    for number, line in enumerate(path.read_text().splitlines(), 1):
        if line.strip():
            try:
                records.append(json.loads(line))
            except json.JSONDecodeError as err:
                raise ValueError(f"{path}:{number} is not valid JSON: {err.msg}") from None
    return records


def append_jsonl(path: Path | str, record: dict) -> None:
    """Append one record as one line, in one write to an O_APPEND descriptor, fsynced.

    For logs that grow for as long as a process lives (a server's trajectories): a kill at any moment leaves
    whole lines only, and processes appending to the same file do not interleave their lines.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    data = (json.dumps(record, ensure_ascii=False, sort_keys=True) + "\n").encode()
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        written = os.write(fd, data)
        if written != len(data):  # only a full disk or a signal does this; say so rather than leave half a line
            raise OSError(f"{path}: wrote {written} of {len(data)} bytes of a record")
        os.fsync(fd)
    finally:
        os.close(fd)


def drop_report(noun: str, items: list, kept: int, dropped: dict[str, str], key, **breakdowns) -> dict:
    """A validation stage's report: how many `noun` it read, kept and dropped, the dropped ones counted by each
    breakdown (`name=function of an item`), and the reason for each dropped id (`key(item)`)."""
    from collections import Counter

    gone = [item for item in items if key(item) in dropped]
    counts = {f"dropped_by_{name}": dict(Counter(by(item) for item in gone)) for name, by in breakdowns.items()}
    return {noun: len(items), "kept": kept, "dropped": len(dropped), **counts, "reasons": dropped}


def ensure_inside(path: Path | str, folder: Path | str, what: str = "path") -> Path:
    """`path`, resolved, if it lies inside `folder` (after resolving `..` and symlinks); ValueError otherwise.
    Every path a run derives from data (an id, a manifest entry) goes through this before anything is written."""
    resolved, root = Path(path).resolve(), Path(folder).resolve()
    if resolved != root and root not in resolved.parents:
        raise ValueError(f"{what} {path} lies outside {root}; refusing to write there")
    return resolved
