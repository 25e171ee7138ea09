"""The Snakemake workflow: lint-clean, the paper scale dry-runs on the slurm executor, `--profile NAME` resolves
our profiles once installed, both configs validate (the notebooks: tests/test_notebooks.py)."""

from __future__ import annotations

import os
import re
import shutil
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


def test_a_dry_run_writes_nothing():
    """`snakemake -n` wrote results/<run>/config.yaml when it read the workflow, after which `make lab RUN=...`
    opened a run that never ran (issue 44). A dry run of a new run plans rule resolved_config in its place and leaves
    no folder; a dry run with a changed config leaves the run's file as it was and says what a real run will do."""
    run = f"dry-probe-{os.getpid()}"
    folder = ROOT / "results" / run
    try:
        done = snakemake("-n", "--config", f"run={run}")
        assert done.returncode == 0, done.stderr[-3000:]
        text = done.stdout + done.stderr
        assert "rule resolved_config:" in text and "rule tasks:" in text  # the plan, with the file's stand-in
        assert not folder.exists()
        read = snakemake("--list-rules", "--config", f"run={run}")  # any other reading of the workflow writes it
        assert read.returncode == 0 and (folder / "config.yaml").is_file(), read.stderr[-3000:]
        before = (folder / "config.yaml").read_bytes()
        changed = snakemake("-n", "--config", f"run={run}", "seed=7")
        assert changed.returncode == 0, changed.stderr[-3000:]
        assert "a real run rewrites it" in changed.stderr and "rule resolved_config:" not in changed.stdout
        assert (folder / "config.yaml").read_bytes() == before
        assert sorted(p.name for p in folder.iterdir()) == ["config.yaml"]
    finally:
        shutil.rmtree(folder, ignore_errors=True)


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
    by_cell = {name: bool(re.search(r"(?:^|, )gpu=1\b", res)) for name, res in gpu}
    assert by_cell["reader__terminus-4b__full__repair__0"] and not by_cell["reader__claude-sonnet__full__repair__0"]
    # issue 42's arms: no subagent under every context, every subagent under the full one, Terminus-4B masked too;
    # the reader on the synthetic benchmarks alone; SWE-bench Verified; sampling cells three times, greedy ones once
    arms = {tuple(n.split("__")[:3]) for n in names}
    for context in ("full", "trunc10k", "mask10", "summarize"):
        assert ("claude-sonnet", "none", context) in arms
    for sub in ("claude-haiku", "qwen3-4b", "sft", "terminus-4b", "claude-sonnet"):
        assert ("claude-sonnet", sub, "full") in arms
    assert ("claude-sonnet", "terminus-4b", "mask10") in arms and ("claude-sonnet", "sft", "mask10") not in arms
    benches = {n.split("__")[3] for n in names}
    assert {"swebench-verified", "swebench-pro", "swe-sharp", "terminal-bench-2"} <= benches
    assert not [n for n in names if n.startswith("reader__") and n.split("__")[3] not in ("repair", "execution")]
    assert {n.split("__")[4] for n in names if n.startswith("claude-sonnet__")} == {"0", "1", "2"}
    assert {n.split("__")[4] for n in names if n.startswith("reader__")} == {"0"}


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


# The slurm profile against snakemake-executor-plugin-slurm as installed: the sbatch line each GPU job gets, built by
# the plugin's own functions from the resources the paper dry run shows, and the names the profile uses.
PROFILE = ROOT / "workflow/profiles/slurm/config.yaml"
SNAKEMAKE_RESOURCES = {"mem_mb", "runtime", "tmpdir", "disk_mb", "gpu", "gpu_model"}


class Resources(dict):
    __getattr__ = dict.__getitem__


def dry_run_jobs(*args: str) -> list[tuple[str, int, Resources]]:
    """(rule, threads, resources) of every job a dry run lists."""
    done = snakemake("-n", *args)
    assert done.returncode == 0, done.stderr[-3000:]
    jobs = []
    for block in re.split(r"\n(?=(?:local)?rule \w+:)", done.stdout + done.stderr):
        head = re.match(r"(?:local)?rule (\w+):", block)
        res = re.search(r"^\s+resources: (.*)$", block, re.M)
        if not head or not res:
            continue
        threads = re.search(r"^\s+threads: (\d+)", block, re.M)
        values = Resources()
        for pair in res.group(1).split(", "):
            key, value = pair.split("=", 1)
            values[key] = int(value) if value.isdigit() else value
        jobs.append((head.group(1), int(threads.group(1)) if threads else 1, values))
    return jobs


def sbatch_line(threads: int, resources: Resources) -> str:
    from types import SimpleNamespace

    from snakemake_executor_plugin_slurm.submit_string import get_submit_command
    from snakemake_executor_plugin_slurm.utils import set_gres_string

    job = SimpleNamespace(threads=threads, resources=resources)
    params = {"run_uuid": "u", "slurm_logfile": "log", "comment_str": "c", "account": "", "partition": ""}
    return get_submit_command(job, params | {"workdir": None}) + set_gres_string(job)


def test_every_gpu_job_asks_the_h200_and_cores_for_vllm():
    jobs = dry_run_jobs("--profile", str(PROFILE.parent), "--configfile", "configs/paper.yaml")
    gpu_rules = set()
    for rule, threads, resources in jobs:
        line = sbatch_line(threads, resources)
        if not resources.get("gpu"):
            assert "--gpus" not in line, (rule, line)
            continue
        gpu_rules.add(rule)
        # the training stages may ask several (test_paper_training_jobs_ask_several_gpus_on_one_node_for_one_launcher)
        assert re.search(r"--gpus=h200:\d", line) or (rule == "eval_cell" and "--gpus=1" in line), (rule, line)
        cpus = re.search(r"--cpus-per-(?:gpu|task)=(\d+)", line)
        assert cpus and int(cpus.group(1)) >= 8, (rule, line)  # one core cannot compile vLLM's server in time
    assert gpu_rules == {"sft", "export_sft", "grpo", "export", "training_summary", "eval_cell"}
    runtimes = {rule: resources["runtime"] for rule, _, resources in jobs}
    assert runtimes["grpo"] == 1440 and runtimes["eval_cell"] == 720


def test_the_profile_names_only_resources_and_settings_the_slurm_plugin_reads():
    import snakemake_executor_plugin_slurm
    import snakemake_executor_plugin_slurm_jobstep
    import yaml

    sources = "".join(
        p.read_text()
        for module in (snakemake_executor_plugin_slurm, snakemake_executor_plugin_slurm_jobstep)
        for p in Path(module.__file__).parent.glob("*.py")
    )
    read = set(re.findall(r"resources\.get\(\s*\"(\w+)\"", sources)) | set(re.findall(r"resources\.(\w+)", sources))
    text = PROFILE.read_text()
    # the keys a user fills in are commented out: uncomment them all and read the profile as YAML
    setting = r'^(\s*)# ([a-z_-]+: (?:"[^"]*"|true|false|\d+))'
    profile = yaml.safe_load(re.sub(setting, r"\1\2", text, flags=re.M))
    keys = set(profile["default-resources"])
    for rule in profile["set-resources"].values():
        keys |= set(rule)
    assert "qos" in keys and "slurm_qos" not in keys
    assert keys <= read | SNAKEMAKE_RESOURCES, keys - read - SNAKEMAKE_RESOURCES
    settings = {
        f.name.replace("_", "-")
        for f in snakemake_executor_plugin_slurm.ExecutorSettings.__dataclass_fields__.values()
    }
    for key in profile:
        if key.startswith("slurm-"):
            assert key.removeprefix("slurm-") in settings, key


def test_the_readme_states_each_stages_slurm_runtime_as_the_rules_set_it():
    """docs/reproduce.md, "What it costs": each stage's time sits beside its `runtime`, which must be the one its
    jobs get."""
    jobs = dry_run_jobs("--profile", str(PROFILE.parent), "--configfile", "configs/paper.yaml")
    runtime = {rule: resources["runtime"] for rule, _, resources in jobs}
    text = (ROOT / "docs" / "reproduce.md").read_text()
    table = text[text.index("| stage | GPUs | time (estimate) | `runtime` |") :].split("\n\n")[0].splitlines()[2:]
    rules_text = "".join(p.read_text() for p in sorted((ROOT / "workflow/rules").glob("*.smk")))
    resubmitted = {
        m.group(1) for m in re.finditer(r"^rule (\w+):\n((?:    .*\n|\n)*)", rules_text, re.M)
        if "retries: resubmissions()" in m.group(2)
    }  # fmt: skip
    checked = set()
    for row in table:
        stage, _, estimate, minutes = (c.strip() for c in row.strip("|").split("|")[:4])
        if stage == "total":
            continue
        # no stage is short: its jobs (one, or 1 + resubmissions() at paper scale, each resuming) cover its estimate
        assert "short" not in minutes, row
        jobs = int(re.search(r"x(\d+) with retries", minutes).group(1)) if "with retries" in minutes else 1
        hours = max([float(h) for h in re.findall(r"(\d+(?:\.\d+)?) h\b", estimate)] or [0])
        stated = [int(n.replace(",", "")) for n in re.findall(r"^\d[\d,]*|(?<=, )\d[\d,]*", minutes)]
        names = ["eval_cell"] if "eval cells" in stage else [name.strip() for name in stage.split(",")]
        for name, value in zip(names, stated if len(stated) > 1 else stated * len(names), strict=True):
            # `figure_*`: every rule of that prefix
            for rule in sorted(r for r in runtime if r.startswith(name[:-1])) if name.endswith("*") else [name]:
                assert runtime[rule] == value, (rule, runtime[rule], row)
                assert value * jobs >= hours * 60, (rule, value, jobs, estimate)
                assert (jobs == 4) == (rule in resubmitted), (rule, jobs)  # resubmissions() is 3 at paper scale
                checked.add(rule)
    # resolved_config: a dry run's stand-in for the config file a real run writes when it reads the workflow
    assert set(runtime) - {"all", "resolved_config"} <= checked, set(runtime) - checked  # every rule has its row


def shell_commands(*args: str) -> dict[str, str]:
    """rule -> its shell command, as a dry run with -p prints it (one job per rule: the training rules)."""
    done = snakemake("-n", "-p", *args)
    assert done.returncode == 0, done.stderr[-3000:]
    commands = {}
    for block in re.split(r"\n(?=(?:local)?rule \w+:)", done.stdout + done.stderr):
        head = re.match(r"(?:local)?rule (\w+):", block)
        command = re.search(r"^(?:Shell command: )?((?:terminus|accelerate) .*)$", block, re.M)
        if head and command:
            commands[head.group(1)] = command.group(1)
    return commands


def test_paper_training_jobs_ask_several_gpus_on_one_node_for_one_launcher():
    """configs/paper.yaml trains SFT and GRPO as DDP: N GPUs, one node, and one slurm task (tasks_per_gpu 0: no
    --ntasks-per-gpu, which would run the whole command once per GPU), in which `accelerate launch` starts a
    process per GPU."""
    paper = load_config(ROOT / "configs/paper.yaml")
    args = ("--profile", str(PROFILE.parent), "--configfile", "configs/paper.yaml")
    jobs = {rule: (threads, resources) for rule, threads, resources in dry_run_jobs(*args)}
    commands = shell_commands(*args)
    for rule in ("sft", "grpo"):
        gpus = paper["model"][f"{rule}_gpus"]
        assert gpus > 1
        threads, resources = jobs[rule]
        assert resources["gpu"] == gpus and resources["nodes"] == 1 and resources["tasks_per_gpu"] == 0
        line = sbatch_line(threads, resources)
        assert f"--gpus=h200:{gpus}" in line and "--nodes=1" in line and "--ntasks-per-gpu" not in line, line
        launch = f"accelerate launch --num_processes {gpus} --config_file configs/accelerate/ddp.yaml -m terminus.cli"
        assert commands[rule].startswith(f"{launch} {rule} --recipe "), commands[rule]


def test_smoke_training_jobs_run_the_plain_command_on_one_gpu():
    """The smoke config's training jobs are as they were: one GPU, no node or task settings, `terminus` itself
    (--forceall: the jobs are planned even where results/smoke is complete, as after `make demo`)."""
    jobs = {rule: resources for rule, _, resources in dry_run_jobs("--forceall")}
    commands = shell_commands("--forceall")
    for rule in ("sft", "grpo"):
        assert jobs[rule]["gpu"] == 1 and "nodes" not in jobs[rule] and "tasks_per_gpu" not in jobs[rule]
    assert commands["sft"].startswith("terminus sft --recipe configs/sft/tiny.yaml --model-name-or-path "), commands
    assert commands["grpo"].startswith("terminus grpo --recipe configs/grpo/tiny.yaml --model-name-or-path "), commands
