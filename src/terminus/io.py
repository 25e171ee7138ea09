"""Atomic writes: a temporary file in the same folder, fsynced, then renamed. Readers never see half a file,
and a kill at any moment leaves the previous version intact. (No room's code: every room may use it.)"""

from __future__ import annotations

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


def ensure_inside(path: Path | str, folder: Path | str, what: str = "path") -> Path:
    """`path`, resolved, if it lies inside `folder` (after resolving `..` and symlinks); ValueError otherwise.
    Every path a run derives from data (an id, a manifest entry) goes through this before anything is written."""
    resolved, root = Path(path).resolve(), Path(folder).resolve()
    if resolved != root and root not in resolved.parents:
        raise ValueError(f"{what} {path} lies outside {root}; refusing to write there")
    return resolved
