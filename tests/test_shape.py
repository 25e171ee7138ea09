"""One idea per module, and no module over MAX_LINES lines (issue 41): past that a module had come to hold several
ideas (readers and HTML, a service and its transports, every notebook's plots in one package __init__), and
each was split along them."""

from __future__ import annotations

from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"
MAX_LINES = 400


def _lengths() -> dict[str, int]:
    return {str(p.relative_to(SRC)): len(p.read_text().splitlines()) for p in sorted(SRC.rglob("*.py"))}


def test_no_module_is_over_the_limit():
    over = {name: n for name, n in _lengths().items() if n > MAX_LINES}
    assert not over, f"modules over {MAX_LINES} lines (split them along their ideas): {over}"
