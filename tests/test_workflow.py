"""The Snakemake workflow: lint-clean, the paper scale dry-runs on the slurm executor, `--profile NAME` resolves
our profiles once installed, both configs validate (the notebooks: tests/test_notebooks.py)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from terminus.config import ROOT, load_config

SNAKEMAKE = [sys.executable, "-m", "snakemake"]


def snakemake(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([*SNAKEMAKE, *args], cwd=ROOT, capture_output=True, text=True, env=env, timeout=300)


def test_lint_is_clean():
    done = snakemake("--lint")
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]


def test_both_configs_validate():
    smoke, paper = load_config(ROOT / "configs/config.yaml"), load_config(ROOT / "configs/paper.yaml")
    assert smoke["run"] == "smoke" and paper["run"] == "paper"
    assert set(smoke) == set(paper)  # same keys, only values differ
    assert paper["model"]["base"] == "Qwen/Qwen3-4B" and smoke["model"]["base"] == "tiny"


def test_paper_dry_run_on_slurm():
    done = snakemake("-n", "--configfile", "configs/paper.yaml", "--executor", "slurm", "--jobs", "20")
    assert done.returncode == 0, done.stderr[-3000:]
    for rule in ("sft", "grpo", "eval_cell", "eval_summary", "figure_case_study"):
        assert rule in done.stdout + done.stderr


def test_paper_dry_run_has_one_eval_job_per_cell():
    from terminus.eval.cells import cell_names

    done = snakemake("-n", "--configfile", "configs/paper.yaml", "--executor", "slurm", "--jobs", "20")
    text = done.stdout + done.stderr
    names = cell_names(load_config(ROOT / "configs/paper.yaml")["eval"])
    assert len(names) == len(set(names)) > 20
    jobs = re.findall(r"^rule eval_cell:.*?output: (\S+)", text, re.M | re.S)
    assert sorted(Path(j).stem for j in jobs) == sorted(names)
    # cells with a local-model subagent ask a GPU; endpoint-only cells do not
    gpu = re.findall(r"^rule eval_cell:.*?output: \S+/cells/(\S+)\.jsonl.*?resources: ([^\n]*)", text, re.M | re.S)
    by_cell = {name: ("gpu=1" in res) for name, res in gpu}
    assert by_cell["reader__terminus-4b__repair__0"] and not by_cell["reader__claude-sonnet__repair__0"]


def test_profile_names_resolve_after_install(tmp_path):
    env = {**os.environ, "HOME": str(tmp_path), "XDG_CONFIG_HOME": str(tmp_path / ".config")}
    subprocess.run(["make", "-s", "install-profiles"], cwd=ROOT, check=True, env=env, capture_output=True)
    assert (tmp_path / ".config/snakemake/slurm/config.yaml").is_file()
    done = snakemake("--profile", "slurm", "--configfile", "configs/paper.yaml", "-n", env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    local = snakemake("--profile", "local", "-n", env=env)
    assert local.returncode == 0, local.stderr[-3000:]
    missing = snakemake(
        "--profile",
        "slurm",
        "-n",
        env={**env, "XDG_CONFIG_HOME": str(tmp_path / "none"), "HOME": str(tmp_path / "none")},
    )
    assert missing.returncode != 0  # without the install, `--profile slurm` is not found: the install is what works


def test_bad_config_is_named(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("run: x\ntasks: {}\neval: {concurrency: 0}\n")
    done = snakemake("-n", "--configfile", str(bad))
    assert done.returncode != 0 and "concurrency" in done.stdout + done.stderr
