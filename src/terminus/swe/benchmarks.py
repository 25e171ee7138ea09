"""Benchmark configs (configs/benchmarks/<name>.yaml) and the repair instances they describe.

instances = load_instances("swebench-pro")                       # hub dataset and split of the config
instances = load_instances("swebench-verified", dataset="rows.jsonl")  # the same schema, offline
instances = load_instances("terminal-bench-2", dataset="tb2/")   # Harbor task folders (`swe.harbor`)
"""

from __future__ import annotations

import logging
from pathlib import Path

import yaml

from terminus.config import ROOT
from terminus.swe.families import FAMILIES, DatasetError, load_rows, to_instance
from terminus.swe.harbor import FAMILY as HARBOR
from terminus.swe.harbor import HarborTask, load_harbor_tasks
from terminus.swe.record import RepairInstance

log = logging.getLogger(__name__)

CONFIG_DIR = ROOT / "configs" / "benchmarks"
BENCHMARKS = ("swebench-verified", "swebench-pro", "swe-sharp")
HARBOR_BENCHMARKS = ("terminal-bench-2",)
# A Harbor benchmark's dataset is a folder of task folders: no split.
REQUIRED = ("name", "family", "dataset", "split")
HARBOR_REQUIRED = ("name", "family", "dataset")


def load_benchmark_config(name: str | Path) -> dict:
    """A benchmark by name (configs/benchmarks/<name>.yaml) or by the path of its YAML file."""
    path = Path(name)
    if path.suffix not in (".yaml", ".yml"):
        path = CONFIG_DIR / f"{name}.yaml"
    if not path.is_file():
        known = ", ".join(sorted(p.stem for p in CONFIG_DIR.glob("*.yaml")))
        raise DatasetError(f"benchmark config {path} does not exist (known: {known})")
    try:
        cfg = yaml.safe_load(path.read_text()) or {}
    except yaml.YAMLError as err:
        raise DatasetError(f"benchmark config {path} is not valid YAML: {err}") from None
    missing = [k for k in (HARBOR_REQUIRED if cfg.get("family") == HARBOR else REQUIRED) if k not in cfg]
    if missing:
        raise DatasetError(f"benchmark config {path}: missing {', '.join(missing)}")
    if cfg["family"] not in (*FAMILIES, HARBOR):
        known = ", ".join((*FAMILIES, HARBOR))
        raise DatasetError(f"benchmark config {path}: family {cfg['family']!r} is not one of {known}")
    cfg["_path"] = str(path)
    return cfg


def _with_run_scripts(cfg: dict, row: dict) -> tuple[dict, tuple[str, str] | None]:
    """SWE-Bench Pro: the official run_script.sh and parser.py of the instance, when their folder is configured."""
    folder = cfg.get("run_scripts_dir")
    if cfg.get("family") != "pro" or not folder:
        return cfg, None
    scripts = Path(folder).expanduser() / str(row.get("instance_id"))
    if not (scripts / "run_script.sh").is_file() or not (scripts / "parser.py").is_file():
        log.warning(
            "%s: no run_script.sh/parser.py under %s; using the per-language command", row.get("instance_id"), scripts
        )
        return cfg, None
    texts = ((scripts / "run_script.sh").read_text(), (scripts / "parser.py").read_text())
    return {**cfg, "test_cmd": "bash run_script.sh {test_files_csv}", "log_parser": "pro-json"}, texts


def instances_from_rows(
    rows: list[dict], cfg: dict | None = None, base_dir: Path | None = None
) -> list[RepairInstance]:
    instances = []
    for row in rows:
        row_cfg, scripts = _with_run_scripts(cfg or {}, row)
        inst = to_instance(row, row_cfg, base_dir=base_dir)
        if scripts:
            inst.run_script, inst.parser_script = scripts
        instances.append(inst)
    ids = [i.instance_id for i in instances]
    if len(ids) != len(set(ids)):
        dup = next(i for i in ids if ids.count(i) > 1)
        raise DatasetError(f"instance id {dup!r} appears more than once")
    return instances


def load_instances(
    benchmark: str | Path | dict | None = None,
    *,
    dataset: str | None = None,
    split: str | None = None,
    ids: list[str] | None = None,
    limit: int | None = None,
) -> list[RepairInstance] | list[HarborTask]:
    """A benchmark's repair instances: its configured dataset, or `dataset` (a local file or hub id) in the same
    schema. Without a benchmark, each row's family is detected from its fields. A Harbor benchmark's instances are
    its task folders (`HarborTask`), from `dataset` or the config's folder."""
    cfg = benchmark if isinstance(benchmark, dict) else load_benchmark_config(benchmark) if benchmark else {}
    if cfg.get("family") == HARBOR:
        return load_harbor_tasks(dataset or cfg["dataset"], cfg, ids=ids, limit=limit)
    if not cfg and dataset and not Path(dataset).is_file():
        cfg = config_for_dataset(dataset) or {}
    source = dataset or cfg.get("dataset")
    if not source:
        raise DatasetError("no dataset: give a benchmark config or --dataset")
    rows = load_rows(source, split or cfg.get("split"))
    if ids:
        wanted = set(ids)
        rows = [r for r in rows if r.get("instance_id") in wanted]
    if limit:
        rows = rows[:limit]
    base_dir = Path(source).resolve().parent if Path(source).is_file() else None
    return instances_from_rows(rows, cfg, base_dir)


def config_for_dataset(dataset: str) -> dict | None:
    """The benchmark config whose `dataset` is this hub id (so `--dataset ScaleAI/SWE-bench_Pro` alone works)."""
    for path in sorted(CONFIG_DIR.glob("*.yaml")):
        if (yaml.safe_load(path.read_text()) or {}).get("dataset") == dataset:
            return load_benchmark_config(path)
    return None


def benchmark_repos(names: list[str]) -> set[str]:
    """Repositories of evaluation benchmarks (their configs' `repos`), to keep them out of training data."""
    repos: set[str] = set()
    for name in names:
        repos |= set(load_benchmark_config(name).get("repos") or [])
    return repos


def dockerfile(inst: RepairInstance, cfg: dict) -> str:
    """The Dockerfile of an instance image for benchmarks without official images (SWE-Sharp-Bench)."""
    build = cfg.get("image_build")
    if not build:
        raise DatasetError(f"benchmark {cfg.get('name')} has no image_build section")
    values = {k: v for k, v in build.items() if k != "dockerfile"}
    return build["dockerfile"].format(
        repo=inst.repo, base_commit=inst.base_commit, instance_id=inst.instance_id, **values
    )
