"""One idea per module, and no module over MAX_LINES lines (issue 41): past that a module had come to hold several
ideas (readers and HTML, a service and its transports, every notebook's plots in one package __init__), and
each was split along them."""

from __future__ import annotations

from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"
MAX_LINES = 400
