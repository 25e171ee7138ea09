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
