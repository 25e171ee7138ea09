"""docs/reproduce.md's sentence on what an edit of the rubric reruns is the DAG's: a dry run over a complete run
(every output present and newer than its inputs) after touching `configs/judge/rubric.yaml` plans exactly the rules
it names."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

from terminus.config import ROOT, load_config
from terminus.eval.cells import cell_name, cells

PAGE = (ROOT / "docs" / "reproduce.md").read_text()


def planned_after_touching_rubric(tmp_path: Path, config: str) -> tuple[dict[str, int], set[str]]:
    """Rule -> planned jobs, and the eval cells planned, in a copy of the workflow whose every output exists."""
    for name in ("Snakefile", "workflow", "configs", "notebooks", "environment.yml"):
        source = ROOT / name
        (shutil.copytree if source.is_dir() else shutil.copy2)(source, tmp_path / name)
    snakemake = [sys.executable, "-m", "snakemake", "--configfile", config]
    summary = subprocess.run([*snakemake, "--summary"], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert summary.returncode == 0, summary.stderr[-2000:]
    now = time.time()
    for line in summary.stdout.splitlines()[1:]:
        path = tmp_path / line.split("\t")[0]
        if path.suffix:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text("")
        else:  # directory() outputs: model folders, the SFT dataset
            path.mkdir(parents=True, exist_ok=True)
        os.utime(path, (now, now))
    done = subprocess.run([*snakemake, "-n"], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0 and "Nothing to be done" in done.stdout + done.stderr, done.stdout[-2000:]
    os.utime(tmp_path / "configs/judge/rubric.yaml", (now + 10, now + 10))
    done = subprocess.run([*snakemake, "-n"], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    text = done.stdout + done.stderr
    counts = {rule: int(n) for rule, n in re.findall(r"^(\w+)\s+(\d+)$", text.split("Job stats:")[1], re.M)}
    counts.pop("total")
    return counts, {Path(p).stem for p in re.findall(r"^rule eval_cell:.*?output: (\S+)", text, re.M | re.S)}


def named(marker: str) -> str:
    found = re.search(rf"<!-- {marker} -->(.*?)<!-- /{marker} -->", PAGE, re.S)
    assert found, f"docs/reproduce.md has no <!-- {marker} --> sentence"
    return found.group(1)


def test_smoke_rubric_edit_reruns_what_the_readme_says(tmp_path):
    counts, _ = planned_after_touching_rubric(tmp_path, "configs/config.yaml")
    assert set(counts) - {"all"} == set(re.findall(r"`(\w+)`", named("rubric-smoke")))
    # the cells, the teacher's verdicts and training never call the smoke's LLM judge: they are not planned
    assert not {"eval_cell", "judge_teacher", "sft_data", "sft", "grpo"} & set(counts)


def test_paper_rubric_edit_reruns_what_the_readme_says(tmp_path):
    counts, planned_cells = planned_after_touching_rubric(tmp_path, "configs/paper.yaml")
    sentence = named("rubric-paper")
    every_rule = set(
        re.findall(r"^rule (\w+):", "".join(p.read_text() for p in (ROOT / "workflow/rules").glob("*.smk")), re.M)
    )
    # not stages of the run's results: the target, the image pre-pulls
    bookkeeping = {"all", "pull_images", "pull_all_images"}
    assert every_rule - set(counts) - bookkeeping == set(re.findall(r"`(\w+)`", sentence))
    cfg = load_config(ROOT / "configs/paper.yaml")
    run = f"results/{cfg['run']}"
    expected = {
        cell_name(*cell)
        for cell in cells(cfg["eval"])
        if cell[3] == "execution" or (cell[1].get("model") or "").replace("{run}", cfg["run"]).startswith(run)
    }
    assert planned_cells == expected
    untouched = len(cells(cfg["eval"])) - len(planned_cells)
    assert f"{untouched} repair, SWE and terminal cells" in sentence
