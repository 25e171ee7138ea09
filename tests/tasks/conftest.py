"""A small local sdist, so that the registry source is tested without the network."""

from __future__ import annotations

import tarfile
from pathlib import Path

import pytest

TALLY = '''"""Tally helpers."""


def total(values):
    result = 0
    for value in values:
        result = result + value
    return result


def above(values, limit):
    return [v for v in values if v > limit]


def spread(values):
    return max(values) - min(values)
'''
TESTS = """from tallyho import above, spread, total


def test_total():
    assert total([1, 2, 3]) == 6


def test_total_empty():
    assert total([]) == 0


def test_above():
    assert above([1, 5, 9], 4) == [5, 9]


def test_above_limit_excluded():
    assert above([4, 5], 4) == [5]


def test_spread():
    assert spread([3, 9, 4]) == 6


def test_already_broken():
    assert total([1]) == 2  # fails before any change: the baseline must quarantine it
"""


def tallyho_sdist(tmp_path: Path, tally: str, extra: dict[str, str] | None = None) -> Path:
    """A download cache holding tallyho-1.0.0.tar.gz (package `tally`, its tests, and `extra` files by relative
    path), as `pip download` would leave it."""
    src = tmp_path / "build" / "tallyho-1.0.0"
    (src / "tallyho").mkdir(parents=True)
    (src / "tallyho" / "__init__.py").write_text(tally)
    (src / "tests").mkdir()
    (src / "tests" / "test_tally.py").write_text(TESTS)
    for rel, text in (extra or {}).items():
        (src / rel).write_text(text)
    (src / "pyproject.toml").write_text('[project]\nname = "tallyho"\nversion = "1.0.0"\n')
    cache = tmp_path / "cache"
    cache.mkdir()
    with tarfile.open(cache / "tallyho-1.0.0.tar.gz", "w:gz") as tar:
        tar.add(src, arcname="tallyho-1.0.0")
    return cache


@pytest.fixture
def registry_cache(tmp_path) -> Path:
    """A download cache holding tallyho-1.0.0.tar.gz, as `pip download` would leave it."""
    return tallyho_sdist(tmp_path, TALLY.replace('"""Tally helpers."""', '"""Tally helpers."""\n'))
