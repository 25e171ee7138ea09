"""The `Task` record (contract in docs/ARCHITECTURE.md), its JSON schema, and JSON-lines reading and writing."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path

from terminus.errors import TerminusError
from terminus.io import RecordError, read_jsonl, write_jsonl_atomic

SCHEMA = "terminus.task/1"
SOURCES = ("synthetic", "registry", "manifest")
TASK_TYPES = ("test-execution", "error-diagnosis", "build/compile", "dependency")
SPLITS = ("train", "val", "test")

JSON_SCHEMA = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": "terminus task",
    "type": "object",
    "required": ["schema", "id", "language", "source", "repo", "task_type", "query", "facts", "split"],
    "properties": {
        "schema": {"const": SCHEMA},
        "id": {"type": "string", "minLength": 1},
        "language": {"type": "string", "minLength": 1},
        "source": {"enum": list(SOURCES)},
        "repo": {"type": "string", "minLength": 1, "description": "repository identity; splits never share one"},
        "task_type": {"enum": list(TASK_TYPES)},
        "query": {"type": "string", "minLength": 1},
        "description": {"type": "string"},
        "facts": {
            "type": "object",
            "properties": {
                "project_root": {"type": "string"},
                "exit_code": {"type": ["integer", "null"]},
                "tests": {
                    "type": "object",
                    "required": ["passed", "failed", "failing"],
                    "properties": {
                        "passed": {"type": "integer", "minimum": 0},
                        "failed": {"type": "integer", "minimum": 0},
                        "skipped": {"type": "integer", "minimum": 0},
                        "failing": {"type": "array", "items": {"type": "string"}},
                    },
                },
                "build": {
                    "type": "object",
                    "required": ["success"],
                    "properties": {"success": {"type": "boolean"}, "warnings": {"type": "integer", "minimum": 0}},
                },
                "error": {
                    "type": "object",
                    "required": ["type", "locations"],
                    "properties": {"locations": {"type": "array", "items": {"type": "string"}}},
                },
                "dependency": {"type": "object", "required": ["package", "fix"]},
            },
        },
        "split": {"enum": list(SPLITS)},
        "workspace": {"type": ["string", "null"], "description": "snapshot folder, relative to the task file"},
        "image": {"type": ["string", "null"]},
        "setup": {"type": "array", "items": {"type": "string"}},
        "variant": {"type": "string"},
        "meta": {"type": "object"},
    },
}


@dataclass
class Task:
    id: str
    language: str
    source: str
    repo: str
    task_type: str
    query: str
    facts: dict
    split: str = "train"
    description: str = ""
    workspace: str | None = None
    image: str | None = None
    setup: list[str] = field(default_factory=list)
    variant: str = ""
    meta: dict = field(default_factory=dict)
    schema: str = SCHEMA

    def to_dict(self) -> dict:
        return asdict(self)

    def workspace_path(self, tasks_file: Path) -> Path | None:
        """The snapshot folder on this machine (workspaces are stored relative to the task file)."""
        if self.workspace is None:
            return None
        return (Path(tasks_file).parent / self.workspace).resolve()


class TaskFileError(TerminusError, ValueError):
    pass


def validate_record(record: dict, where: str = "task") -> None:
    # Imported here, not at the top: jsonschema alone loads in ~60 ms, but where jupyter's format extras installed
    # rfc3987-syntax (this project's environment does) its grammar compiles on import, ~0.8 s, and every stage
    # and `terminus --help` import this module.
    import jsonschema

    try:
        jsonschema.validate(record, JSON_SCHEMA)
    except jsonschema.ValidationError as err:
        path = "/".join(str(p) for p in err.absolute_path) or "(top level)"
        raise TaskFileError(f"{where}: field {path}: {err.message}") from None


def load_tasks(path: Path) -> list[Task]:
    """Read and validate a task file; errors name the line and the field."""
    path = Path(path)
    if not path.is_file():
        raise TaskFileError(f"task file {path} does not exist (build it with `terminus tasks build`)")
    try:
        records = read_jsonl(path)
    except RecordError as err:  # a task file's errors are TaskFileErrors, which callers catch by name
        raise TaskFileError(f"task file {err}") from None
    tasks = []
    for number, record in enumerate(records, 1):
        validate_record(record, f"{path} record {number}")
        tasks.append(Task(**record))
    ids = [t.id for t in tasks]
    if len(ids) != len(set(ids)):
        dup = next(i for i in ids if ids.count(i) > 1)
        raise TaskFileError(f"{path}: task id {dup!r} appears more than once")
    return tasks


def write_tasks(path: Path, tasks: list[Task]) -> None:
    records = [t.to_dict() for t in tasks]
    for i, record in enumerate(records):
        validate_record(record, f"task {i} ({record.get('id')})")
    write_jsonl_atomic(path, records)
