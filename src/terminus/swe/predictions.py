"""Predictions in the official formats, so the official harnesses can confirm our grading:

- SWE-bench (JSON lines): `{"instance_id", "model_name_or_path", "model_patch"}` per line;
- SWE-Bench Pro (one JSON list): `{"instance_id", "patch", "prefix"}` per entry (helper_code/gather_patches.py).
"""

from __future__ import annotations

import json
from pathlib import Path

from terminus.io import write_text_atomic

FORMATS = ("swebench", "pro")


class PredictionsError(ValueError):
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


def read_predictions(path: Path | str) -> dict[str, str]:
    """instance_id -> patch, from either format (a JSON list, a JSON object keyed by id, or JSON lines)."""
    path = Path(path)
    if not path.is_file():
        raise PredictionsError(f"predictions file {path} does not exist")
    text = path.read_text()
    try:
        if text.lstrip().startswith("["):
            records = json.loads(text)
        elif path.suffix == ".json" and text.lstrip().startswith("{"):
            loaded = json.loads(text)  # SWE-bench also accepts {instance_id: {...}}
            records = [{"instance_id": k, **v} for k, v in loaded.items()] if "instance_id" not in loaded else [loaded]
        else:
            records = [json.loads(line) for line in text.splitlines() if line.strip()]
    except json.JSONDecodeError as err:
        raise PredictionsError(f"{path}: not JSON or JSON lines ({err.msg} at line {err.lineno})") from None
    out = {}
    for i, record in enumerate(records):
        if not isinstance(record, dict) or "instance_id" not in record:
            raise PredictionsError(f"{path}: entry {i} has no instance_id")
        if "model_patch" not in record and "patch" not in record:
            raise PredictionsError(f"{path}: entry {record['instance_id']} has neither model_patch nor patch")
        out[record["instance_id"]] = record.get("model_patch", record.get("patch")) or ""
    return out
