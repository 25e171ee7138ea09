"""Turning the raw bytes a command wrote into what a terminal would have shown, within a size budget."""

from __future__ import annotations

import re
from dataclasses import dataclass

from terminus.timing import normalise_timing

# CSI sequences (colours, cursor moves), OSC sequences (window titles, hyperlinks), and two-byte escapes.
# DCS, SOS, PM and APC strings (ESC P/X/^/_ ... ESC \\) go whole, not just their first two bytes.
_ANSI = re.compile(
    r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b[PX^_][^\x1b]*(?:\x1b\\)?|\x1b[@-Z\\-_]"
)
# Control characters a terminal does not print, C1 too (U+0080-U+009F: U+009B is a one-character CSI to a terminal
# that reads UTF-8); \t, \n and \r are handled separately.
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")
_REPLACEMENT_RUN = re.compile("\ufffd{2,}")


def _overwrite(line: str) -> str:
    """Apply carriage returns the way a terminal does: later text overwrites the start of the line."""
    if "\r" not in line:
        return line
    shown = ""
    for segment in line.split("\r"):
        shown = segment + shown[len(segment) :]
    return shown


def normalise(data: bytes) -> str:
    """Decode bytes of any kind (binary, invalid UTF-8, ANSI colour, progress bars) into plain text.

    >>> normalise(b"\\x1b[32mok\\x1b[0m 10%\\r20%\\r30%\\n\\xff\\xfe done")
    'ok 30%\\n\\ufffd done'
    """
    text = data.decode("utf-8", errors="replace")
    text = _ANSI.sub("", text).replace("\r\n", "\n")
    text = "\n".join(_overwrite(line) for line in text.split("\n"))
    text = _CONTROL.sub("", text)
    return _REPLACEMENT_RUN.sub("\ufffd", text)


@dataclass(frozen=True)
class Cut:
    """What `OutputCollector` kept: the text a terminal shows, and how many raw bytes it left out (0: none)."""

    text: str
    elided_bytes: int


def _read_len(line: bytes) -> int:
    """A line's length as a model reads it (terminal noise and timing text normalised), with its newline."""
    return len(normalise_timing(normalise(line))) + 1


def _fit(lengths, limit: int) -> int:
    """How many lines, of these read lengths (`_read_len`) taken in order, fit in `limit` characters."""
    used = n = 0
    for length in lengths:
        used += length
        if used > limit:
            break
        n += 1
    return n


class OutputCollector:
    """Keeps the head and the tail of a stream of any length, in bounded memory, and cuts them where every run of
    the command cuts alike.

    The cut falls at line ends and is measured on the text a model reads (`timing`: durations and addresses
    as `?`): whole lines are kept from the start while they fit in `head` characters and from the end while they
    fit in `tail`, and a note between them counts the lines left out. Two runs whose output differs only in timing
    text (node:test prints `duration_ms` for every test) then keep the same lines and give the same count, so a
    model reads the same text; a cut at a byte offset moved with each duration's digits (the reproduce check found
    a main agent's token count differing by 11 in 254k that way). The lines are kept raw, timings and all, as the
    trajectory records them.

    Bounds: each side keeps twice its budget of raw bytes, enough unless normalising shortens the text by half. A
    first or last line longer than its whole budget (`yes | tr -d '\\n'`, a minified file) is cut within itself,
    at `head` and `tail` bytes, and the note then counts bytes: there, as before, timing digits can move the cut.
    """

    def __init__(self, head: int, tail: int) -> None:
        self.head_limit = head
        self.tail_limit = tail
        self.head_keep, self.tail_keep = 2 * head, 2 * tail  # raw bytes kept on each side
        self.head = bytearray()
        self.tail = bytearray()
        self.total = 0
        self.newlines = 0
        self.ends_with_newline = False

    def feed(self, chunk: bytes) -> None:
        if not chunk:
            return
        self.total += len(chunk)
        self.newlines += chunk.count(b"\n")
        self.ends_with_newline = chunk.endswith(b"\n")
        room = self.head_keep - len(self.head)
        if room > 0:
            self.head += chunk[:room]
            chunk = chunk[room:]
        if chunk and self.tail_keep > 0:
            self.tail += chunk
            if len(self.tail) > 2 * self.tail_keep:  # trim lazily: amortised O(1) per byte
                del self.tail[: len(self.tail) - self.tail_keep]

    def cut(self) -> Cut:
        tail = bytes(self.tail[-self.tail_keep :]) if self.tail_keep else b""
        whole = self.total <= len(self.head) + len(tail)  # all of it is here
        raw_end = bytes(self.head) + tail if whole else tail  # the stream's end, for a cut in bytes
        if whole:
            # Read lengths are at most one more than the bytes (the last line's newline, if it has none): output
            # shorter than the budget in bytes fits as a model reads it, and needs no measuring.
            if self.total < self.head_limit + self.tail_limit:
                return Cut(normalise(raw_end), 0)
            lines = raw_end.split(b"\n")
            if self.ends_with_newline:
                lines.pop()  # the empty piece after the last newline
            lengths = [_read_len(line) for line in lines]
            if sum(lengths) <= self.head_limit + self.tail_limit:
                return Cut(normalise(raw_end), 0)
            head_lines = lines[:-1] if not self.ends_with_newline else lines
            n_head = _fit(lengths[: len(head_lines)], self.head_limit)
            tail_lines, from_end = lines[n_head:], reversed(lengths[n_head:])
        else:
            head_lines = bytes(self.head).split(b"\n")[:-1]  # the last piece may stop mid-line
            n_head = _fit(map(_read_len, head_lines), self.head_limit)
            tail_lines = tail.split(b"\n")[1:]  # the first piece may start mid-line
            if self.ends_with_newline and tail_lines:  # none when no tail is kept (`tail` 0)
                tail_lines.pop()
            from_end = map(_read_len, reversed(tail_lines))  # measured only as far as the budget reaches
        n_tail = _fit(from_end, self.tail_limit)
        if (self.head_limit and not n_head) or (self.tail_limit and not n_tail):
            return self._byte_cut(raw_end)
        kept_head, kept_tail = head_lines[:n_head], tail_lines[len(tail_lines) - n_tail :]
        total_lines = self.newlines + (0 if self.ends_with_newline else 1)
        elided_lines = total_lines - n_head - n_tail
        end = b"\n" if self.ends_with_newline else b""
        shown = sum(len(line) + 1 for line in kept_head)
        shown += sum(len(line) + 1 for line in kept_tail) - 1 + len(end) if kept_tail else 0
        note = f"[... {elided_lines} line{'s' if elided_lines != 1 else ''} of output elided ...]\n"
        head_text = normalise(b"\n".join(kept_head) + b"\n") if kept_head else ""
        tail_text = normalise(b"\n".join(kept_tail) + end) if kept_tail else ""
        return Cut(head_text + note + tail_text, max(1, self.total - shown))

    def _byte_cut(self, raw_end: bytes) -> Cut:
        head = bytes(self.head[: self.head_limit])
        tail = raw_end[len(raw_end) - self.tail_limit :] if self.tail_limit else b""
        elided = self.total - len(head) - len(tail)
        return Cut(normalise(head) + f"\n[... {elided} bytes of output elided ...]\n" + normalise(tail), elided)
