"""`terminus tasks build`: the corpus from its three sources, with queries and splits by repository.

Output: the task file (JSON lines) plus, next to it, `repos/<snapshot>/` (the repository each task's episodes
start from) and `<name>.stats.json` (counts by language, type, source and split, next to the paper's).
Deterministic for a given config and seed.
"""

from __future__ import annotations

import logging
import os
import random
import shutil
from collections.abc import Callable
from pathlib import Path

import yaml

from terminus.io import write_jsonl_atomic
from terminus.runspec import RunSpec, load_run
from terminus.sandbox.spec import SandboxSpec
from terminus.tasks import copyfacts, registry, synthetic
from terminus.tasks import manifest as manifests
from terminus.tasks.queries import make_query, paraphrase
from terminus.tasks.record import Task, load_tasks, write_tasks
from terminus.tasks.splits import SHORT, CorpusError, assign_splits, corpus_stats

# (swe config section, task file to write, the run's sandbox spec, seed) -> its stats: `swe.corpus.build_swe_corpus`
SweSource = Callable[[dict, Path, SandboxSpec, int], dict]

log = logging.getLogger(__name__)


SAFE_NAME = manifests.SAFE_ID


def _snapshot_tasks(snapshot: str, task_types, meta: dict, **fields) -> list[Task]:
    """One task per type on the snapshot `repos/<snapshot>` (a synthetic project or a registry mutant); queries
    are made later, for every source at once."""
    return [
        Task(
            id=f"{snapshot}-{SHORT[t]}",
            task_type=t,
            query="",
            workspace=f"repos/{snapshot}",
            meta=dict(meta),
            **fields,
        )
        for t in task_types
    ]


def _synthetic(cfg: dict, seed: int, repos_dir: Path, progress) -> list[Task]:
    tasks = []
    domains = list(synthetic.DOMAINS)
    for language in cfg["languages"]:
        for index in range(cfg["repos_per_language"]):
            domain = domains[(index + synthetic.LANGUAGES.index(language)) % len(domains)]
            for variant in cfg["variants"]:
                if variant not in synthetic.SUPPORTED[language]:
                    continue
                project = synthetic.generate(
                    language, domain, variant, index, seed, verbose_lines=cfg["verbose_lines"]
                )
                snapshot = f"{language}-{project.spec.package}-{variant}"
                project.write(repos_dir / snapshot)
                meta = {
                    "domain": domain,
                    "subfolder": project.spec.subfolder,
                    "suites": project.spec.suites,
                    "verbose": bool(project.spec.verbose_lines),
                    "runner": language,
                    **({"fix": synthetic.fix_for(project)} if variant == "fail" else {}),
                }
                tasks += _snapshot_tasks(
                    snapshot,
                    synthetic.TASK_TYPES[variant],
                    meta,
                    language=language,
                    source="synthetic",
                    repo=f"synthetic/{language}/{project.spec.package}",
                    facts=project.facts,
                    variant=variant,
                )
                progress()
    return tasks


def _copy(cfg: dict, seed: int, repos_dir: Path, progress) -> list[Task]:
    """The copy-the-fact family (`copyfacts`): one test-execution task per project, facts fresh in each."""
    tasks = []
    for index in range(cfg["repos"]):
        project = copyfacts.generate(index, seed)
        snapshot = f"copy-{project.package}"
        project.write(repos_dir / snapshot)
        tasks += _snapshot_tasks(
            snapshot,
            ["test-execution"],
            {"family": "copy", "runner": "python", "subfolder": "", "suites": 1, "verbose": False},
            language="python",
            source="synthetic",
            repo=f"copy/{project.package}",
            facts=project.facts,
            variant="copy",
        )
        progress()
    return tasks


def _registry(cfg: dict, seed: int, repos_dir: Path, progress, report: dict, sandbox: SandboxSpec) -> list[Task]:
    path = Path(cfg["packages"])
    if not path.is_file():
        raise CorpusError(f"tasks.registry.packages: {path} does not exist")
    packages = yaml.safe_load(path.read_text()) or []
    if not packages:
        raise CorpusError(f"tasks.registry.packages: {path} lists no packages")
    for i, p in enumerate(packages):
        if not isinstance(p, dict) or "name" not in p or "version" not in p:
            raise CorpusError(f"{path} entry {i}: needs a name and a version, e.g. {{name: toolz, version: 1.0.0}}")
        if not all(SAFE_NAME.match(str(p[k])) for k in ("name", "version")):  # both become folder names
            raise CorpusError(f"{path} entry {i}: name and version may hold only letters, digits, '.', '_', '-'")
    if cfg.get("max_packages"):
        packages = packages[: cfg["max_packages"]]
    cache = Path(os.path.expanduser(cfg["cache"]))
    tasks = []
    for p in packages:
        name, version = p["name"], str(p["version"])
        work = repos_dir / ".registry-work" / f"{name}-{version}"
        result = registry.mutants_for(
            name,
            version,
            cache=cache,
            workdir=work,
            count=cfg["mutants_per_package"],
            seed=seed,
            max_tries=cfg["max_tries"],
            sandbox=sandbox,
        )
        report[name] = {
            "status": result.status,
            "reason": result.reason,
            "mutants": len(result.mutants),
            "dropped": result.dropped,
            "quarantined": result.baseline_quarantined,
        }
        if result.status == "unavailable":
            print(f"registry source: skipping {name}=={version}: {result.reason}")
        elif result.status != "ok":
            print(f"registry source: {name}=={version} gives no tasks: {result.reason}")
        for i, mutant in enumerate(result.mutants):
            snapshot = f"pypi-{name}-{version}-m{i}"
            dest = repos_dir / snapshot
            shutil.rmtree(dest, ignore_errors=True)
            (work / f"mutant-{i}").rename(dest)
            meta = {
                "package": name,
                "version": version,
                "mutation": f"{mutant.file}:{mutant.line} {mutant.original} -> {mutant.replacement}",
                "runner": "python",
                "fix": mutant.fix,
            }
            tasks += _snapshot_tasks(
                snapshot,
                ("test-execution", "error-diagnosis"),
                meta,
                language="python",
                source="registry",
                repo=f"pypi/{name}",
                facts=mutant.facts,
                variant="mutant",
            )
        shutil.rmtree(work, ignore_errors=True)
        progress()
    shutil.rmtree(repos_dir / ".registry-work", ignore_errors=True)
    return tasks


def _manifests(paths: list[str], repos_dir: Path) -> list[Task]:
    tasks = []
    for path in paths:
        for entry in manifests.load_manifest(Path(path)):
            snapshot = f"manifest-{entry['id']}"
            manifests.checkout(entry, repos_dir / snapshot, within=repos_dir)
            tasks.append(
                Task(
                    id=snapshot,
                    language=entry["language"],
                    source="manifest",
                    repo=entry.get("repo_id") or entry["repo"].rstrip("/").rsplit("/", 1)[-1].removesuffix(".git"),
                    task_type=entry["task_type"],
                    query=entry.get("query", ""),
                    description=entry.get("description", ""),
                    facts=entry["facts"],
                    workspace=f"repos/{snapshot}",
                    image=entry["image"],
                    setup=list(entry.get("setup") or []),
                    variant="manifest",
                    meta={"commit": entry["commit"], "test_cmd": entry.get("test_cmd")},
                )
            )
    return tasks


def _swe(swe: dict, out: Path, seed: int, sandbox: SandboxSpec, report: dict, source: SweSource | None) -> list[Task]:
    """Real-repository tasks (`source`: the selection, validated in its images), built under swe/ beside `out`;
    their snapshot paths are re-rooted at `out`'s folder."""
    if source is None:
        raise CorpusError("the config enables tasks.swe, but this build was given no SWE source")
    swe_out = out.parent / "swe" / "tasks.jsonl"
    report["swe"] = source(swe, swe_out, sandbox, seed)
    tasks = load_tasks(swe_out)
    for task in tasks:
        if task.workspace:
            task.workspace = f"swe/{task.workspace}"
    return tasks


def build_corpus(
    run: RunSpec, out: Path, show_progress: bool = True, swe_source: SweSource | None = None
) -> list[Task]:
    """The corpus of the run's `tasks` section; registry baselines and SWE validation run in the run's sandbox.
    `swe_source` builds the real-repository tasks when the config enables them: `terminus.swe.corpus`'s
    `build_swe_corpus`, handed in by the caller (the CLI), since `swe` is a room above `tasks` and builds on it."""
    config = run.config
    cfg, seed = config["tasks"], config["seed"]
    out = Path(out)
    repos_dir = out.parent / "repos"
    repos_dir.mkdir(parents=True, exist_ok=True)
    syn, reg = cfg.get("synthetic", {}), cfg.get("registry", {})
    units = len(syn["languages"]) * syn["repos_per_language"] if syn.get("enabled") else 0
    copies = cfg.get("copy") or {}
    units += copies.get("repos", 0) if copies.get("enabled") else 0
    if reg.get("enabled"):
        listed = yaml.safe_load(Path(reg["packages"]).read_text()) if Path(reg["packages"]).is_file() else []
        units += min(len(listed or []), reg.get("max_packages") or len(listed or []))
    from rich.progress import Progress

    report: dict = {}
    with Progress(disable=not show_progress, transient=True) as bar:
        job = bar.add_task("building tasks", total=max(units, 1))

        def step() -> None:
            bar.advance(job)

        tasks = []
        if syn.get("enabled"):
            tasks += _synthetic(syn, seed, repos_dir, step)
        if copies.get("enabled"):
            tasks += _copy(copies, seed, repos_dir, step)
        if reg.get("enabled"):
            tasks += _registry(reg, seed, repos_dir, step, report, run.sandbox)
        tasks += _manifests(cfg.get("manifests") or [], repos_dir)
        if (cfg.get("swe") or {}).get("enabled"):
            tasks += _swe(cfg["swe"], out, seed, run.sandbox, report, swe_source)
    if not tasks:
        raise CorpusError("the config enables no source that gives tasks")
    by_domain = cfg["splits"].get("by", "repo") == "domain"

    def unit(task: Task) -> str:  # what a split holds whole
        return f"domain/{task.meta['domain']}" if by_domain and task.meta.get("domain") else task.repo

    splits = assign_splits([unit(t) for t in tasks], cfg["splits"], seed)
    para = cfg.get("paraphrase")
    for task in tasks:
        task.split = splits[unit(task)]
        if not task.query:
            rng = random.Random(f"{seed}/{task.id}")
            task.query = make_query(task.task_type, task.language, task.facts.get("project_root", "."), rng)
            if para:
                task.query = paraphrase(
                    task.query, para["base_url"], para["model"], os.environ.get(para.get("api_key_env") or "", None)
                )
    tasks.sort(key=lambda t: t.id)
    write_tasks(out, tasks)
    stats = corpus_stats(tasks)
    stats["registry"] = report
    stats_path = out.with_suffix(".stats.json")
    write_jsonl_atomic(stats_path, [stats])  # one JSON object, written atomically
    return tasks


def small_corpus(
    root: Path, languages: list[str], repos_per_language: int, variants: list[str], splits: dict | None = None
) -> Path:
    """A synthetic-only corpus under `root` (its config.yaml, tasks.jsonl and repos/), built through the same path
    as a run's: what benchmarks and checks run on. Returns the task file."""

    root = Path(root)
    raw = {
        "run": "small",
        "tasks": {
            "synthetic": {"languages": languages, "repos_per_language": repos_per_language, "variants": variants},
            "registry": {"enabled": False},
            "splits": splits or {"train": 1.0, "val": 0.0, "test": 0.0},
        },
    }
    (root / "config.yaml").write_text(yaml.safe_dump(raw))
    build_corpus(load_run(root / "config.yaml"), root / "tasks.jsonl", show_progress=False)
    return root / "tasks.jsonl"
