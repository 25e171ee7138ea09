"""The output collector's cut: at line ends, measured on what a model reads, so timing text cannot move it."""

from __future__ import annotations

import random
import re

from terminus.sandbox.output import OutputCollector
from terminus.timing import normalise_timing


def collect(data: bytes, head: int = 300, tail: int = 300, chunk: int | None = None):
    collector = OutputCollector(head, tail)
    if chunk is None:
        collector.feed(data)
    else:
        rng = random.Random(chunk)
        at = 0
        while at < len(data):
            step = rng.randint(1, chunk)
            collector.feed(data[at : at + step])
            at += step
    return collector.cut()


def node_log(durations: list[float]) -> bytes:
    lines = []
    for i, d in enumerate(durations):
        lines += [f"[geometry] reconciling batch {i:03d}: {17 + i % 5} records ok", f"ok {i + 1} - case {i}",
                  f"  duration_ms: {d}"]  # fmt: skip
    return ("\n".join(lines) + "\n# fail 1\n").encode()


def elided_lines(text: str) -> int:
    return int(re.search(r"\[\.\.\. (\d+) lines? of output elided \.\.\.\]", text).group(1))


def test_output_that_fits_is_kept_whole():
    data = b"\x1b[32mok\x1b[0m 1\n2\n"
    assert collect(data).text == "ok 1\n2\n" and collect(data).elided_bytes == 0


def test_runs_differing_only_in_timing_read_the_same():
    rng = random.Random(0)
    a = node_log([round(rng.uniform(0, 1), 6) for _ in range(80)])
    b = node_log([round(rng.uniform(0, 100), 3) for _ in range(80)])
    assert len(a) != len(b)
    cut_a, cut_b = collect(a), collect(b)
    assert cut_a.text != cut_b.text  # the raw text keeps each run's timings
    assert normalise_timing(cut_a.text) == normalise_timing(cut_b.text)  # what a model reads is the same


def test_cut_is_at_line_ends_and_counts_the_lines_left_out():
    data = "".join(f"line {i}\n" for i in range(1, 1001)).encode()
    cut = collect(data, head=100, tail=100)
    head, note, tail = re.split(r"(\[\.\.\. \d+ lines of output elided \.\.\.\]\n)", cut.text)
    assert head.startswith("line 1\n") and head.endswith("\n") and tail.endswith("line 1000\n")
    assert len(head) <= 100 and len(tail) <= 100
    assert head.count("\n") + elided_lines(note) + tail.count("\n") == 1000
    assert cut.elided_bytes == len(data) - len(head) - len(tail)


def test_chunking_does_not_change_the_cut():
    data = node_log([i / 7 for i in range(200)])
    whole = collect(data)
    for chunk in (1, 7, 100, 5000):
        assert collect(data, chunk=chunk) == whole


def test_last_line_without_newline_is_kept_in_the_tail():
    data = ("".join(f"row {i}\n" for i in range(500)) + "done: 3 failed").encode()
    cut = collect(data, head=50, tail=50)
    assert cut.text.endswith("row 499\ndone: 3 failed")
    shown = cut.text.count("\n") - 1  # the note's own newline
    assert shown + elided_lines(cut.text) + 1 == 501  # the last line has no newline of its own


def test_a_line_longer_than_the_budget_is_cut_in_bytes():
    data = b"x" * 10_000
    cut = collect(data, head=100, tail=100)
    assert cut.text == "x" * 100 + "\n[... 9800 bytes of output elided ...]\n" + "x" * 100
    assert cut.elided_bytes == 9800


def test_head_only_budget_keeps_the_head_and_counts_the_rest():
    data = "".join(f"line {i}\n" for i in range(1, 1001)).encode()  # longer than the head keeps, ends in \n
    cut = collect(data, head=100, tail=0)
    head, note = re.split(r"(\[\.\.\. \d+ lines of output elided \.\.\.\]\n)", cut.text)[:2]
    assert head.startswith("line 1\n") and cut.text.endswith(note)
    assert head.count("\n") + elided_lines(note) == 1000
