"""Predictions in the official formats, so the official harnesses can confirm our grading:

- SWE-bench (JSON lines): `{"instance_id", "model_name_or_path", "model_patch"}` per line;
- SWE-Bench Pro (one JSON list): `{"instance_id", "patch", "prefix"}` per entry (helper_code/gather_patches.py).
"""

from __future__ import annotations

import json
from pathlib import Path

from terminus.errors import TerminusError
from terminus.io import RecordError, read_jsonl, write_text_atomic

FORMATS = ("swebench", "pro")


class PredictionsError(TerminusError, ValueError):
    pass


def write_predictions(records: list[dict], path: Path | str, fmt: str = "swebench") -> Path:
    """Write predictions; each record has `instance_id`, `model_patch` (or `patch`) and `model_name_or_path`
    (or `prefix`). A missing patch is written as the empty string, which grades as unresolved."""
    if fmt not in FORMATS:
        raise PredictionsError(f"unknown predictions format {fmt!r}; one of {', '.join(FORMATS)}")
    entries = []
    for i, record in enumerate(records):
        if not record.get("instance_id"):
            raise PredictionsError(f"prediction {i} has no instance_id")
        patch = record.get("model_patch", record.get("patch")) or ""
        model = str(record.get("model_name_or_path", record.get("prefix")) or "")
        entries.append((str(record["instance_id"]), model, str(patch)))
    if fmt == "swebench":
        text = "".join(
            json.dumps({"instance_id": i, "model_name_or_path": m, "model_patch": p}) + "\n" for i, m, p in entries
        )
    else:
        text = json.dumps([{"instance_id": i, "patch": p, "prefix": m} for i, m, p in entries], indent=1) + "\n"
    write_text_atomic(path, text)
    return Path(path)


def read_predictions(path: Path | str) -> dict[str, object]:
    """instance_id -> patch, from either format (a JSON list, a JSON object keyed by id, or JSON lines). A file
    that is not UTF-8 JSON of objects with a string instance_id is a PredictionsError naming it. A patch is kept
    as given (null is the empty patch): one that is not text is that prediction's error when it is graded."""
    path = Path(path)
    if not path.is_file():
        raise PredictionsError(f"predictions file {path} does not exist")
    try:
        text = path.read_bytes().decode("utf-8")
    except UnicodeDecodeError as err:
        raise PredictionsError(f"{path}: not UTF-8 text (byte {err.start})") from None
    try:
        if text.lstrip().startswith("["):
            records = json.loads(text)
        elif path.suffix == ".json" and text.lstrip().startswith("{"):
            loaded = json.loads(text)  # SWE-bench also accepts {instance_id: {...}}
            if "instance_id" in loaded:
                records = [loaded]
            else:
                records = [{"instance_id": k, **v} if isinstance(v, dict) else v for k, v in loaded.items()]
        else:
            records = read_jsonl(path)
    except json.JSONDecodeError as err:
        raise PredictionsError(f"{path}: not JSON or JSON lines ({err.msg} at line {err.lineno})") from None
    except RecordError as err:
        raise PredictionsError(str(err)) from None
    out: dict[str, object] = {}
    for i, record in enumerate(records):
        if not isinstance(record, dict):
            raise PredictionsError(f"{path}: entry {i} is not an object (a JSON {type(record).__name__})")
        iid = record.get("instance_id")
        if not isinstance(iid, str) or not iid:
            raise PredictionsError(f"{path}: entry {i} has no instance_id (a non-empty string)")
        if "model_patch" not in record and "patch" not in record:
            raise PredictionsError(f"{path}: entry {iid} has neither model_patch nor patch")
        patch = record["model_patch"] if "model_patch" in record else record["patch"]
        out[iid] = "" if patch is None else patch
    return out
