"""Every measured figure in the prose of the README and the docs/ pages comes from the committed tables through
scripts/readme_results.py, so that none can go stale: the spans are what the script makes of the tables, a changed
table or a hand-edited figure is caught, and no measured-looking number stands outside a span (estimates, which are
no measurements, aside: each sits between `<!-- estimate... -->` and `<!-- /estimate -->`)."""

from __future__ import annotations

import re
import sys

import pytest

from terminus.config import ROOT

sys.path.insert(0, str(ROOT / "scripts"))
import readme_results

PAGES = readme_results.PAGES
IDS = [str(p.relative_to(ROOT)) for p in PAGES]
README = (ROOT / "README.md").read_text()
MEASURED = re.compile(r"(?<![\w.])\d[\d,.]*\s?(?:x\b|%|k\b| ms\b| ?min\b| s\b)")
# constants and configuration, not measurements: the intervals' level, the probe's learning-rate factor, the size
# of the SWE-rebench-V2 selection
ALLOWED = {"95%", "3x", "10k"}
# Per page, what looks measured and is not: ARCHITECTURE.md's copy timeout on a FIFO `.gitignore` (a constant of
# the code) and the size of the one output in which the reproducibility check once found a difference (history, not
# a table's figure).
PAGE_ALLOWED = {"docs/ARCHITECTURE.md": {"20 s", "254k"}}
# Measured, but in no committed table yet, so not generated: the served held-out summary's rate at smoke scale
# (docs/reproduce.md, "What makes the paper scale feasible"). A table under results/benchmarks/ and a span would
# close this; nothing else may join it.
NOT_YET_TABLED = {"docs/reproduce.md": {"34 s"}}


def outside_spans(text: str) -> str:
    """The prose a reader takes as written by hand: generated spans, estimates and code removed."""
    text = re.sub(r"<!-- f:\w+ -->.*?<!-- /f -->", "", text, flags=re.S)
    text = re.sub(r"<!-- results:(\w+) -->.*?<!-- /results:\1 -->", "", text, flags=re.S)
    text = re.sub(r"<!-- estimate\b.*?<!-- /estimate -->", "", text, flags=re.S)
    return re.sub(r"```.*?```|`[^`\n]*`", "", text, flags=re.S)


def test_the_pages_are_what_the_tables_say():
    values = readme_results.figures()
    for path, name in zip(PAGES, IDS, strict=True):
        text = path.read_text()
        assert readme_results.render(text, name, values) == text, f"{name}: run scripts/readme_results.py --write"


def test_a_hand_edited_or_stale_figure_is_caught():
    edited = README.replace("<!-- f:smoke_repair -->", "<!-- f:smoke_repair -->9", 1)
    assert edited != README and readme_results.render(edited) == README
    table = README.replace("| scripted | full | 3", "| scripted | full | 4", 1)
    assert table != README and readme_results.render(table) == README
    with pytest.raises(SystemExit, match="no_such_figure"):
        readme_results.render(README + "<!-- f:no_such_figure -->1<!-- /f -->")
    with pytest.raises(SystemExit, match="no_such_table"):
        readme_results.render(README + "<!-- results:no_such_table -->\n<!-- /results:no_such_table -->")


@pytest.mark.parametrize("path", PAGES, ids=IDS)
def test_no_measured_figure_outside_the_generated_spans(path):
    name = str(path.relative_to(ROOT))
    found = [m.group(0).strip() for m in MEASURED.finditer(outside_spans(path.read_text()))]
    allowed = ALLOWED | PAGE_ALLOWED.get(name, set()) | NOT_YET_TABLED.get(name, set())
    assert [f for f in found if f not in allowed] == []


def test_the_check_sees_a_figure_outside_the_spans():
    text = "took 24 min <!-- f:smoke_minutes -->~24 min<!-- /f --> <!-- estimate -->3-15 min<!-- /estimate --> `5 s`"
    assert [m.group(0) for m in MEASURED.finditer(outside_spans(text))] == ["24 min"]


def test_the_readme_states_its_time_and_results_from_the_tables():
    """The README's first line's time (the whole DAG's, from benchmarks/dag_times.py), its results table and its
    summary are generated; a time is a range only where the timed runs differ ("~24-24 min" said one run as two)."""
    spans = set(re.findall(r"<!-- f:(\w+) -->", README))
    assert {"dag_minutes", "smoke_repair", "learning_sft_recall"} <= spans
    assert "<!-- results:smoke -->" in README
    assert readme_results._minutes([1414.5]) == "~24 min"
    assert readme_results._minutes([1414.5, 1430.0]) == "~24 min"
    assert readme_results._minutes([1414.5, 1800.0]) == "~24-30 min"
    every = "".join(p.read_text() for p in PAGES)
    assert {"savings_ratio", "overhead", "paper_cells"} <= set(re.findall(r"<!-- f:(\w+) -->", every))
