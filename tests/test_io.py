"""terminus.io's reader and atomic write, as their callers rely on them: a log that resumes drops only the last line
a kill cut short (`torn_tail`), every other reader stays strict; one atomic write leaves the old file or the new."""

from __future__ import annotations

import json

import pytest

from terminus.errors import TerminusError
from terminus.io import MissingFileError, RecordError, read_jsonl, write_bytes_atomic, write_jsonl_atomic


def test_torn_tail_drops_only_a_cut_last_line(tmp_path):
    path = tmp_path / "log.jsonl.part"
    path.write_text(json.dumps({"id": "a"}) + "\n" + json.dumps({"id": "b"}) + "\n" + '{"id": "c", "tur')
    assert [r["id"] for r in read_jsonl(path, torn_tail=True)] == ["a", "b"]
    with pytest.raises(RecordError, match=r"log.jsonl.part:3 is not valid JSON"):
        read_jsonl(path)  # strict without the option


def test_torn_tail_keeps_a_whole_last_line_and_refuses_a_broken_middle_one(tmp_path):
    path = tmp_path / "log.jsonl"
    path.write_text('{"id": "a"}\n{"id": "b"}')  # no newline after the last record: it is whole, so kept
    assert [r["id"] for r in read_jsonl(path, torn_tail=True)] == ["a", "b"]
    path.write_text('{"id": "a"}\n{"id": \n{"id": "c"}\n\n')
    with pytest.raises(RecordError, match=r":2 is not valid JSON"):
        read_jsonl(path, torn_tail=True)


def test_a_missing_file_is_a_project_error_and_a_file_not_found_error(tmp_path):
    with pytest.raises(MissingFileError) as caught:
        read_jsonl(tmp_path / "none.jsonl")
    assert isinstance(caught.value, TerminusError) and isinstance(caught.value, FileNotFoundError)


def test_an_atomic_write_replaces_the_file_and_leaves_nothing_beside_it(tmp_path):
    path = tmp_path / "sub" / "figure.png"
    write_bytes_atomic(path, b"one")
    write_bytes_atomic(path, b"two")
    write_jsonl_atomic(tmp_path / "sub" / "r.jsonl", [{"q": "a\u2028b"}])
    assert path.read_bytes() == b"two"
    assert sorted(p.name for p in path.parent.iterdir()) == ["figure.png", "r.jsonl"]
    assert read_jsonl(tmp_path / "sub" / "r.jsonl") == [{"q": "a\u2028b"}]
