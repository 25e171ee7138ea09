"""Turning the raw bytes a command wrote into what a terminal would have shown, within a size budget."""

from __future__ import annotations

import re

# CSI sequences (colours, cursor moves), OSC sequences (window titles, hyperlinks), and two-byte escapes.
_ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b[@-Z\\-_]")
# Control characters a terminal does not print; \t, \n and \r are handled separately.
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
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


class OutputCollector:
    """Keeps the first `head` and the last `tail` bytes of a stream of any length, in bounded memory."""

    def __init__(self, head: int, tail: int) -> None:
        self.head_limit = head
        self.tail_limit = tail
        self.head = bytearray()
        self.tail = bytearray()
        self.total = 0

    def feed(self, chunk: bytes) -> None:
        self.total += len(chunk)
        room = self.head_limit - len(self.head)
        if room > 0:
            self.head += chunk[:room]
            chunk = chunk[room:]
        if chunk and self.tail_limit > 0:
            self.tail += chunk
            if len(self.tail) > 2 * self.tail_limit:  # trim lazily: amortised O(1) per byte
                del self.tail[: len(self.tail) - self.tail_limit]

    @property
    def elided(self) -> int:
        return self.total - len(self.head) - min(len(self.tail), self.tail_limit)

    def text(self) -> str:
        tail = bytes(self.tail[-self.tail_limit :]) if self.tail_limit else b""
        if self.elided <= 0:
            return normalise(bytes(self.head) + tail)
        return normalise(bytes(self.head)) + f"\n[... {self.elided} bytes of output elided ...]\n" + normalise(tail)
