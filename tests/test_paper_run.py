"""The paper run's sizes and time (docs/paper-run.md): each size's overlay dry-runs SFT and GRPO with its own recipes
and hub id, the 4B overlay is configs/paper.yaml itself, the smaller recipes differ from 4B's only where their
comments say why, and the page's step, hour and time-limit arithmetic is the recipes' and the rules' numbers."""

from __future__ import annotations

import math
import re

import yaml

from terminus.config import ROOT, config_hash, load_config
from test_workflow import PROFILE, dry_run_jobs, snakemake

PAGE = (ROOT / "docs/paper-run.md").read_text()
SIZES = {"4b": "Qwen/Qwen3-4B", "1.7b": "Qwen/Qwen3-1.7B", "0.6b": "Qwen/Qwen3-0.6B"}


def recipe(stage: str, size: str) -> dict:
    return yaml.safe_load((ROOT / f"configs/{stage}/qwen3-{size}.yaml").read_text())


def rule_blocks(text: str) -> dict[str, str]:
    """Each job's block of a dry run (`-p`: with its shell command), by rule; the last job of a rule wins."""
    found = (re.match(r"(?:local)?rule (\w+):", b) for b in re.split(r"\n(?=(?:local)?rule \w+:)", text))
    return {m.group(1): m.string for m in found if m}


def test_each_sizes_dry_run_lists_sft_and_grpo_with_that_sizes_recipe():
    for size, hub in SIZES.items():
        done = snakemake("-n", "-p", "--configfile", "configs/paper.yaml", f"configs/sizes/qwen3-{size}.yaml")
        assert done.returncode == 0, (size, done.stderr[-3000:])
        blocks = rule_blocks(done.stdout + done.stderr)
        run = "results/paper" if size == "4b" else f"results/paper-{size}"
        assert f"configs/sft/qwen3-{size}.yaml" in blocks["sft"] and hub in blocks["sft"], size
        assert f"configs/grpo/qwen3-{size}.yaml" in blocks["grpo"] and f"{run}/models/grpo" in blocks["grpo"], size
        for other in set(SIZES) - {size}:
            assert f"qwen3-{other}.yaml" not in blocks["sft"] + blocks["grpo"], (size, other)


def test_the_4b_overlay_is_the_paper_config_and_the_others_change_only_the_size(tmp_path):
    from snakemake.utils import update_config

    paper = yaml.safe_load((ROOT / "configs/paper.yaml").read_text())
    for size, hub in SIZES.items():
        merged = yaml.safe_load((ROOT / "configs/paper.yaml").read_text())
        overlay = yaml.safe_load((ROOT / f"configs/sizes/qwen3-{size}.yaml").read_text())
        update_config(merged, overlay)  # as Snakemake merges two --configfile
        path = tmp_path / f"{size}.yaml"
        path.write_text(yaml.safe_dump(merged))
        filled = load_config(path)
        assert filled["model"]["base"] == hub and set(overlay) <= {"run", "model", "eval"}
        if size == "4b":
            assert merged == paper and config_hash(filled) == config_hash(load_config(ROOT / "configs/paper.yaml"))
        else:
            assert {s["name"] for s in filled["eval"]["subagents"]} >= {"none", f"qwen3-{size}", f"terminus-{size}"}


def test_the_smaller_recipes_keep_4bs_steps_batch_and_budget():
    changed = {
        "sft": {"model_name_or_path", "dataset_path", "output_dir", "learning_rate"},
        "grpo": {"model_name_or_path", "tasks_file", "output_dir", "learning_rate", "vllm_gpu_memory_utilization"},
    }
    for stage, allowed in changed.items():
        big = recipe(stage, "4b")
        for size in ("1.7b", "0.6b"):
            small = recipe(stage, size)
            assert set(small) == set(big), (stage, size)
            assert {k for k in big if big[k] != small[k]} == allowed, (stage, size)
            assert small["learning_rate"] > big["learning_rate"]  # the narrower model's scaled rate
    assert recipe("sft", "1.7b")["model_name_or_path"] == SIZES["1.7b"]


def numbers(text: str) -> list[float]:
    return [float(n.replace(",", "")) for n in re.findall(r"\d[\d,]*(?:\.\d+)?", text)]


def table(heading: str) -> list[list[str]]:
    rows = PAGE[PAGE.index(heading) :].split("\n\n")[0].splitlines()[2:]
    return [[c.strip() for c in row.strip("|").split("|")] for row in rows]


def test_the_paper_run_page_states_the_step_and_hour_arithmetic_of_the_recipe():
    parts = table("| part | seconds a step (estimate) |")
    *pieces, (_, step, _) = parts
    ranges = {name: numbers(seconds) for name, seconds, _ in pieces}
    assert [sum(r[i] for r in ranges.values()) for i in (0, 1)] == numbers(step) == [390, 1480]  # issue 43
    max_steps = recipe("grpo", "4b")["max_steps"]
    assert f"hours for {max_steps} steps" in PAGE
    split = ("generation", "old log-probs + update")  # divided across ranks; the waits overlap and do not
    for gpus, seconds, hours in table("| GPUs | seconds a step (estimate) |"):
        n = int(gpus)
        want = [sum(r[i] / (n if name in split else 1) for name, r in ranges.items()) for i in (0, 1)]
        assert numbers(seconds) == want, (gpus, seconds, want)
        assert numbers(hours) == [round(max_steps * s / 3600, 1) for s in want], (gpus, hours)


def test_the_paper_run_page_states_the_time_limits_the_rules_and_recipes_set():
    paper = dry_run_jobs("--profile", str(PROFILE.parent), "--configfile", "configs/paper.yaml")
    jobs = {rule: resources for rule, _, resources in paper}
    rules_text = "".join(p.read_text() for p in sorted((ROOT / "workflow/rules").glob("*.smk")))
    resubmissions = int(re.search(r"def resubmissions\(\).*?return 0 if is_tiny\(\) else (\d+)", rules_text, re.S)[1])
    retried = {
        m[1] for m in re.finditer(r"^rule (\w+):\n((?:    .*\n|\n)*)", rules_text, re.M)
        if "retries: resubmissions()" in m[2]
    }  # fmt: skip
    for rule, runtime, count, limit, *_ in table("| rule | `runtime` | jobs |"):
        assert int(runtime.replace(",", "")) == jobs[rule]["runtime"], rule
        assert int(count) == (1 + resubmissions if rule in retried else 1), rule
        assert float(limit) == jobs[rule]["runtime"] * int(count) / 60, rule

    grpo = recipe("grpo", "4b")
    max_steps, save_steps = grpo["max_steps"], grpo["save_steps"]
    assert f"`max_steps` {max_steps}" in PAGE and f"every `save_steps` ({save_steps}) steps" in PAGE
    assert f"resubmissions()` times\n({resubmissions} at paper scale" in PAGE
    startup = numbers(re.search(r"estimated at \d+ minutes \((\d+) s\)", PAGE)[1])[0]
    budget = jobs["grpo"]["runtime"] * 60 * (1 + resubmissions)
    for_steps = budget - (1 + resubmissions) * startup
    assert f"= {budget:,.0f} s; less {1 + resubmissions} job starts x {startup:.0f} s = {for_steps:,.0f} s" in PAGE
    times = max_steps + resubmissions * save_steps
    assert f"{max_steps} + {resubmissions} x {save_steps} = {times} step-times" in PAGE
    worst = {int(g): numbers(s)[1] for g, s, _ in table("| GPUs | seconds a step (estimate) |")}
    fitting = []
    for n, step in worst.items():
        line = next(x for x in PAGE.splitlines() if x.startswith(f"- {n} GPU"))
        line += PAGE[PAGE.index(line) + len(line) :].split("\n- ")[0]
        assert f"{times} x {step:,.0f} = {times * step:,.0f} s" in line, n
        if times * step <= for_steps:
            fitting.append(n)
            assert "fits" in line and "not fit" not in line, n
        else:
            most = math.floor(for_steps / step)
            assert "does not fit" in line and f"`max_steps` {most - resubmissions * save_steps}" in line, n
    default = int(re.search(r"Default GPUs for a GRPO job: (\d+)", PAGE)[1])
    assert default == jobs["grpo"]["gpu"]  # the rule's resource: the page follows it when it changes
    if default not in fitting:  # the page names the GPU count the recipe's steps need, and the fallback on default
        assert f"need {min(fitting)} GPUs for the GRPO job" in PAGE
        assert f"sets `max_steps: {math.floor(for_steps / worst[default]) - resubmissions * save_steps}`" in PAGE
