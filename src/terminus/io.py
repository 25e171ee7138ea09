"""Atomic writes: a temporary file in the same folder, fsynced, then renamed. Readers never see half a file,
and a kill at any moment leaves the previous version intact; JSON-lines logs grow by whole lines only. (No room's
code: every room may use it.)"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import tempfile
import types
import typing
from collections import Counter
from collections.abc import Callable, Iterable
from pathlib import Path

from terminus.errors import TerminusError

log = logging.getLogger(__name__)


def write_bytes_atomic(path: Path | str, data: bytes) -> None:
    """The one atomic write: a temporary file beside `path`, fsynced, renamed over it, then the folder fsynced so
    that the rename itself survives a power cut (without that, a crash can leave the old name or none)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    folder = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(folder)
    finally:
        os.close(folder)


def write_text_atomic(path: Path | str, text: str) -> None:
    write_bytes_atomic(path, text.encode("utf-8"))


def write_json_atomic(path: Path | str, payload: dict) -> None:
    write_text_atomic(path, json.dumps(payload, ensure_ascii=False, indent=1))


def write_jsonl_atomic(path: Path | str, records: list[dict]) -> None:
    write_text_atomic(path, "".join(json.dumps(r, ensure_ascii=False, sort_keys=True) + "\n" for r in records))


class RecordError(TerminusError, ValueError):
    """A JSON-lines file holds a line that is not a record of the kind its reader expects."""


class MissingFileError(TerminusError, FileNotFoundError):
    """A file a reader was given does not exist."""


class OutsideFolderError(TerminusError, ValueError):
    """A path derived from data (an id, a manifest entry) would land outside the folder it belongs in."""


# A field spec, as `read_jsonl` checks it: a type, or a tuple of alternatives (None for null); `[spec]` a list whose
# items match spec; `{name: spec}` an object whose fields, those present, match theirs; `{str: spec}` an object whose
# every value matches spec. `object` matches anything.
Spec = type | tuple | list | dict | None
_NAMES = {str: "a string", int: "an integer", float: "a number", bool: "true or false", dict: "an object",
          list: "a list", type(None): "null"}  # fmt: skip


def read_jsonl(
    path: Path | str,
    fields: dict | Callable[[dict], dict | None] | None = None,
    *,
    required: Iterable[str] = (),
    torn_tail: bool = False,
) -> list[dict]:
    """Every record of a JSON-lines file, each checked as it is read: a missing file is MissingFileError; a line
    that is not UTF-8, not JSON, not an object, lacks a `required` field or has a field of the wrong type (`fields`:
    a spec, or a function of the record giving one) is a RecordError naming the file, the line and the problem.

    Strict: no line is skipped, except with `torn_tail` the last line when it is no JSON: a log appended to as a
    run goes and read back when it resumes (collect's `.part` files, SFT's live metrics log) may have been cut
    there by a kill, and that record is then redone or lost, not an error. Lines are split at newlines only, not
    at the other line breaks `str.splitlines` knows, which JSON strings may hold raw (U+2028, form feed)."""
    path = Path(path)
    if not path.is_file():
        raise MissingFileError(f"{path} does not exist")
    records = []
    lines = path.read_bytes().split(b"\n")
    last = max((i for i, raw in enumerate(lines, 1) if raw.strip()), default=0)
    for number, raw in enumerate(lines, 1):
        if torn_tail and number == last and _torn(raw):
            log.info("%s:%d is incomplete (a kill cut it short); dropped", path, number)
            continue
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError as err:
            raise RecordError(f"{path}:{number} is not UTF-8 text (byte {err.start + 1} of the line)") from None
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as err:
            raise RecordError(f"{path}:{number} is not valid JSON: {err.msg} (column {err.colno})") from None
        records.append(check_record(record, fields(record) if callable(fields) else fields, f"{path}:{number}",
                                    required))  # fmt: skip
    return records


def _torn(raw: bytes) -> bool:
    """A last line that a kill cut short does not parse (a record is an object: no prefix of one is JSON)."""
    try:
        json.loads(raw)
    except ValueError:  # not UTF-8 or not JSON
        return True
    return False


def check_record(record: object, fields: dict | None, where: str, required: Iterable[str] = ()) -> dict:
    """`record` if it is a JSON object with the `required` fields and `fields`' types; else RecordError at `where`."""
    if not isinstance(record, dict):
        raise RecordError(f"{where} is {_name(record)}, not a JSON object (one record per line)")
    missing = [name for name in required if name not in record]
    if missing:
        raise RecordError(f"{where} has no field {', '.join(repr(m) for m in missing)}")
    problem = _mismatch(record, fields or {}, "")
    if problem:
        raise RecordError(f"{where}: {problem}")
    return record


def _mismatch(value: object, spec: Spec, at: str) -> str | None:
    """Why `value` does not match `spec` (naming the field by its path `at`), or None when it does."""
    if spec is object:
        return None
    if isinstance(spec, dict):
        if not isinstance(value, dict):
            return _wrong(value, spec, at)
        if str in spec:  # a mapping: every value matches spec[str]
            spec = dict.fromkeys(value, spec[str])
        for name, sub in spec.items():
            if name in value:
                problem = _mismatch(value[name], sub, f"{at}.{name}" if at else name)
                if problem:
                    return problem
        return None
    if isinstance(spec, list):
        if not isinstance(value, list):
            return _wrong(value, spec, at)
        for i, item in enumerate(value):
            problem = _mismatch(item, spec[0], f"{at}[{i}]")
            if problem:
                return problem
        return None
    if isinstance(spec, tuple):
        problems = [_mismatch(value, alternative, at) for alternative in spec]
        if not all(problems):
            return None
        for alternative, problem in zip(spec, problems, strict=True):  # a list whose item is wrong: name the item
            if _shape(alternative) is type(value):
                return problem
        return _wrong(value, spec, at)
    kind = type(None) if spec is None else spec
    if kind is float and isinstance(value, int) and not isinstance(value, bool):  # JSON's 1 is a float's 1.0
        return None
    return None if isinstance(value, kind) else _wrong(value, spec, at)


def _shape(spec: Spec) -> type:
    return dict if isinstance(spec, dict) else list if isinstance(spec, list) else type(None) if spec is None else spec


def record_fields(cls: type, **overrides: Spec) -> dict:
    """The field spec of a record dataclass (`Trajectory`, `EvalRecord`), from its type hints; `overrides` for the
    fields whose hint says less than the readers need (`messages: list[dict]`)."""
    hints = typing.get_type_hints(cls)
    return {f.name: overrides.get(f.name, _spec(hints[f.name])) for f in dataclasses.fields(cls)}


def required_fields(cls: type) -> tuple[str, ...]:
    """The fields a record dataclass has no default for."""
    return tuple(f.name for f in dataclasses.fields(cls) if f.default is f.default_factory is dataclasses.MISSING)


def _spec(hint: object) -> Spec:
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        return tuple(_spec(a) for a in args)
    if origin is list or hint is list:
        return [_spec(args[0]) if args else object]
    if origin is dict or hint is dict:
        return dict
    if dataclasses.is_dataclass(hint):
        return record_fields(hint)
    if hint is type(None):
        return None
    return hint if hint in _NAMES else object


def _wrong(value: object, spec: Spec, at: str) -> str:
    return f"field {at!r} is {_name(value)}, expected {_expected(spec)}"


def _expected(spec: Spec) -> str:
    if isinstance(spec, tuple):
        return " or ".join(dict.fromkeys(_expected(s) for s in spec))
    if isinstance(spec, dict):
        return "an object"
    if isinstance(spec, list):
        return "a list"
    return _NAMES.get(type(None) if spec is None else spec, getattr(spec, "__name__", str(spec)))


def _name(value: object) -> str:
    return _NAMES.get(type(value), type(value).__name__)


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

    gone = [item for item in items if key(item) in dropped]
    counts = {f"dropped_by_{name}": dict(Counter(by(item) for item in gone)) for name, by in breakdowns.items()}
    return {noun: len(items), "kept": kept, "dropped": len(dropped), **counts, "reasons": dropped}


def ensure_inside(path: Path | str, folder: Path | str, what: str = "path") -> Path:
    """`path`, resolved, if it lies inside `folder` (after resolving `..` and symlinks); OutsideFolderError otherwise.
    Every path a run derives from data (an id, a manifest entry) goes through this before anything is written."""
    resolved, root = Path(path).resolve(), Path(folder).resolve()
    if resolved != root and root not in resolved.parents:
        raise OutsideFolderError(f"{what} {path} lies outside {root}; refusing to write there")
    return resolved
