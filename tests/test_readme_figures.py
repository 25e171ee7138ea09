"""Every measured figure in the README's prose comes from the committed tables through scripts/readme_results.py, so
that none can go stale: the spans are what the script makes of the tables, a changed table or a hand-edited figure
is caught, and no measured-looking number stands outside a span (the GPU-hours estimate, which is no measurement,
aside)."""

from __future__ import annotations

import re
import sys

import pytest

from terminus.config import ROOT

sys.path.insert(0, str(ROOT / "scripts"))
import readme_results

README = (ROOT / "README.md").read_text()
MEASURED = re.compile(r"(?<![\w.])\d[\d,.]*\s?(?:x\b|%|k\b| ms\b| ?min\b| s\b)")
# constants and configuration, not measurements: the intervals' level, the probe's learning-rate factor, the size
# of the SWE-rebench-V2 selection
ALLOWED = {"95%", "3x", "10k"}
# Measured, but in no committed table yet, so not generated: the served held-out summary's rate at smoke scale
# ("At paper scale"). A table under results/benchmarks/ and a span would close this; nothing else may join it.
NOT_YET_TABLED = {"34 s"}


def test_the_readme_is_what_the_tables_say():
    assert readme_results.render(README) == README, "run `python scripts/readme_results.py --write`"


def test_a_hand_edited_or_stale_figure_is_caught():
    edited = README.replace("<!-- f:savings_ratio -->", "<!-- f:savings_ratio -->9", 1)
    assert edited != README and readme_results.render(edited) == README
    with pytest.raises(SystemExit, match="no_such_figure"):
        readme_results.render(README + "<!-- f:no_such_figure -->1<!-- /f -->")


def test_no_measured_figure_outside_the_generated_spans():
    text = re.sub(r"<!-- f:\w+ -->.*?<!-- /f -->", "", README, flags=re.S)
    text = re.sub(r"<!-- results -->.*?<!-- /results -->", "", text, flags=re.S)
    text = re.sub(r"\*\*What it costs: an estimate\.\*\*.*?## Corpus", "", text, flags=re.S)  # assumptions
    text = re.sub(r"```.*?```|`[^`\n]*`", "", text, flags=re.S)
    found = [m.group(0).strip() for m in MEASURED.finditer(text)]
    assert [f for f in found if f not in ALLOWED | NOT_YET_TABLED] == []
    assert {"smoke_minutes", "smoke_repair", "savings_ratio", "overhead", "paper_cells"} <= set(
        re.findall(r"<!-- f:(\w+) -->", README)
    )
