"""The tiny tokenizer's seed corpus holds what a model reads (prompts, template, examples), never the package's
own source: an edit under src/ must not move the tokenizer, and with it every smoke table after it."""

from __future__ import annotations

from terminus.config import ROOT
from terminus.train.tiny import _seed_corpus


def test_the_seed_corpus_reads_no_package_source():
    texts = set(_seed_corpus())
    sources = [p for p in ROOT.glob("src/terminus/**/*.py") if p.read_text().strip()]
    assert sources and not [str(p) for p in sources if p.read_text() in texts]
    assert (ROOT / "configs" / "agent" / "chat_template.jinja").read_text() in texts
