"""What produced a resumable output: `<out-stem>.provenance.json` next to it (policy, model, task file hash,
samples, config hash, ...). A rerun into the same output with other inputs would mix records of two
experiments, so it is refused with one line naming the difference, unless `--force` starts afresh."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from terminus.errors import TerminusError
from terminus.io import write_text_atomic


class ProvenanceMismatch(TerminusError, ValueError):
    """The output holds records made from other inputs than this run's."""


def file_sha256(path: Path | str) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()[:16]


def sidecar(out: Path) -> Path:
    return out.with_name(out.stem + ".provenance.json")


def differs(out: Path, provenance: dict) -> str:
    """What differs between the inputs recorded beside `out` and `provenance` ("" when they agree; a missing or
    unreadable sidecar differs in everything)."""
    path = sidecar(out)
    provenance = json.loads(json.dumps(provenance, sort_keys=True))  # as it will read back
    try:
        recorded = json.loads(path.read_text()) if path.is_file() else None
    except json.JSONDecodeError:
        recorded = None
    if recorded is None:
        return f"no {path.name}"
    keys = sorted(set(recorded) | set(provenance))
    return "; ".join(
        f"{k}: {recorded.get(k)!r} then, {provenance.get(k)!r} now"
        for k in keys
        if recorded.get(k) != provenance.get(k)
    )


def model_stamp(model: str | None) -> str | None:
    """A local model folder's identity without reading its weights (names, sizes and modification times of its
    files: an export written again is another model); a hub id or endpoint model as given."""
    if not model or not Path(model).is_dir():
        return model
    files = sorted(p for p in Path(model).rglob("*") if p.is_file())
    listing = [(str(p.relative_to(model)), p.stat().st_size, p.stat().st_mtime_ns) for p in files]
    return hashlib.sha256(json.dumps(listing).encode()).hexdigest()[:16]


def check_or_write(out: Path, provenance: dict, has_records: bool) -> None:
    """Refuse when `out` holds records made from other inputs; otherwise record this run's inputs."""
    path = sidecar(out)
    provenance = json.loads(json.dumps(provenance, sort_keys=True))  # as it will read back
    if has_records:
        if not path.is_file():
            raise ProvenanceMismatch(
                f"{out} holds records but no {path.name} saying what produced them; use "
                "another output, or pass --force to start afresh"
            )
        try:
            recorded = json.loads(path.read_text())
        except json.JSONDecodeError:
            recorded = {}
        keys = sorted(set(recorded) | set(provenance))
        differences = [
            f"{k}: {recorded.get(k)!r} then, {provenance.get(k)!r} now"
            for k in keys
            if recorded.get(k) != provenance.get(k)
        ]
        if differences:
            raise ProvenanceMismatch(
                f"{out} was produced from other inputs ({'; '.join(differences)}); use another "
                "output, or pass --force to discard it and start afresh"
            )
        return
    write_text_atomic(path, json.dumps(provenance, indent=1, sort_keys=True) + "\n")
