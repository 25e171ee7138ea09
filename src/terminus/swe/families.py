"""Dataset adapters: rows of each SWE-bench family, by their real field names, -> `RepairInstance`.

- `swebench`: princeton-nlp/SWE-bench_Verified, microsoft/SWE-Sharp-Bench (one CSV). `FAIL_TO_PASS` /
  `PASS_TO_PASS` are JSON strings; image, test command and parser come from the benchmark config.
- `pro`: ScaleAI/SWE-bench_Pro. Lowercase `fail_to_pass` / `pass_to_pass` and `selected_test_files_to_run` are
  Python-repr strings; `before_repo_set_cmd` (its last line puts the tests in place); image
  `jefzda/sweap-images:{dockerhub_tag}` with the repository at /app.
- `rebench-v2`: nebius/SWE-rebench-V2. `FAIL_TO_PASS` / `PASS_TO_PASS` are lists; `image_name`;
  `install_config{base_image_name, install, test_cmd, log_parser}`; the repository at /<repository name>.

Rows load with HF `datasets`: a hub id and split on a cluster, or a local .jsonl/.json/.csv/.parquet file in the
same schema. A row may also carry `repo_path` (a local git repository with `base_commit`), `test_cmd` and
`log_parser`: it is then graded on that repository in any sandbox, without an image (the offline tests, and a
user's own repositories).
"""

from __future__ import annotations

import ast
import codecs
import csv
import json
import logging
import re
import subprocess
from collections import Counter
from pathlib import Path

from terminus.errors import TerminusError
from terminus.swe.parsers import parser_for
from terminus.swe.patchcheck import files_after
from terminus.swe.record import RepairInstance

log = logging.getLogger(__name__)

FAMILIES = ("swebench", "pro", "rebench-v2")
# SWE-bench's NON_TEST_EXTS: files a test patch touches that are not test directives.
NON_TEST_EXTS = (".json", ".png", "csv", ".txt", ".md", ".jpg", ".jpeg", ".pkl", ".yml", ".yaml", ".toml")


# The SWE-bench family's repositories (SWE-bench full, Lite with its dev split, Verified): all Python.
SWEBENCH_PYTHON_REPOS = {
    "astropy/astropy", "django/django", "marshmallow-code/marshmallow", "matplotlib/matplotlib", "mwaskom/seaborn",
    "pallets/flask", "psf/requests", "pvlib/pvlib-python", "pydata/xarray", "pydicom/pydicom", "pylint-dev/astroid",
    "pylint-dev/pylint", "pytest-dev/pytest", "pyvista/pyvista", "scikit-learn/scikit-learn", "sphinx-doc/sphinx",
    "sqlfluff/sqlfluff", "sympy/sympy",
}  # fmt: skip
# File extensions -> language, to infer a row's language from the files of its repository.
EXTENSION_LANGUAGES = {
    ".py": "python", ".go": "go", ".rs": "rust", ".js": "javascript", ".mjs": "javascript", ".cjs": "javascript",
    ".jsx": "javascript", ".ts": "typescript", ".tsx": "typescript", ".java": "java", ".kt": "kotlin",
    ".scala": "scala", ".cs": "csharp", ".c": "c", ".h": "c", ".cc": "cpp", ".cpp": "cpp", ".hpp": "cpp",
    ".rb": "ruby", ".php": "php", ".swift": "swift",
}  # fmt: skip


class DatasetError(TerminusError, ValueError):
    pass


def load_rows(dataset: str, split: str | None = None) -> list[dict]:
    """Rows of a local file (JSON lines, JSON, CSV, parquet) or of a hub dataset (id + split)."""
    from datasets import load_dataset

    path = Path(dataset)
    kinds = {".jsonl": "json", ".json": "json", ".csv": "csv", ".parquet": "parquet"}
    try:
        if path.suffix in kinds:
            if not path.is_file():
                raise DatasetError(f"dataset file {path} does not exist")
            if path.suffix != ".parquet":
                _check_utf8(path)
            options = _csv_options(path) if path.suffix == ".csv" else {}
            rows = load_dataset(kinds[path.suffix], data_files=str(path), split="train", **options)
        else:
            rows = load_dataset(dataset, split=split or "test")
        return [dict(r) for r in rows]  # rows decode here: their errors are the source's too
    except DatasetError:
        raise
    except Exception as err:  # datasets raises many kinds; one line that names the source is what helps
        where = path if path.suffix in kinds else f"hub dataset {dataset} (split {split or 'test'})"
        raise DatasetError(f"cannot load {where}: {type(err).__name__}: {err}") from None


def _check_utf8(path: Path) -> None:
    """A text dataset file is UTF-8 (pyarrow would fail on the first bad row, naming no file)."""
    decoder, offset = codecs.getincrementaldecoder("utf-8")(), 0
    with path.open("rb") as fh:
        while True:
            chunk = fh.read(1 << 20)
            try:
                decoder.decode(chunk, final=not chunk)
            except UnicodeDecodeError as err:
                raise DatasetError(f"dataset file {path}: not UTF-8 text (byte {offset + err.start})") from None
            if not chunk:
                return
            offset += len(chunk)


def _csv_options(path: Path) -> dict:
    """Every CSV column as a string: type inference would turn a `version` of "0.10" into the float 0.1."""

    from datasets import Features, Value

    with path.open(newline="") as fh:
        header = next(csv.reader(fh), [])
    return {"features": Features({name: Value("string") for name in header}), "keep_default_na": False}


def detect_family(row: dict) -> str:
    if "install_config" in row:
        return "rebench-v2"
    if "before_repo_set_cmd" in row or "dockerhub_tag" in row or "fail_to_pass" in row:
        return "pro"
    if "FAIL_TO_PASS" in row:
        return "swebench"
    raise DatasetError(f"row {row.get('instance_id', '?')}: not a SWE-bench-family row (no FAIL_TO_PASS/fail_to_pass)")


def decode_tests(value, field: str, instance_id: str) -> list[str]:
    """A per-test list as published: a list, a JSON string (SWE-bench) or a Python-repr string (SWE-Bench Pro)."""
    if value is None or value == "":
        return []
    if isinstance(value, list):
        return [str(v) for v in value]
    if isinstance(value, str):
        for decode in (json.loads, ast.literal_eval):
            try:
                decoded = decode(value)
            except (ValueError, SyntaxError):
                continue
            if isinstance(decoded, list):
                return [str(v) for v in decoded]
    raise DatasetError(f"row {instance_id}: field {field} is not a list of test ids (got {str(value)[:80]!r})")


def directives_of(test_patch: str) -> list[str]:
    """The files a test patch leaves in the tree, as SWE-bench's test directives (data files left out). SWE-bench
    reads the `b/` path of each `diff --git` line, which names a deleted file too: a test runner given a deleted
    file fails before any test runs, so deleted files are left out here."""
    return [f for f in files_after(test_patch) if not f.endswith(NON_TEST_EXTS)]


def _django_modules(files: list[str]) -> list[str]:
    """SWE-bench's directives for django: `tests/a/test_b.py` -> `a.test_b`."""
    out = []
    for f in files:
        name = f.rsplit("/", 1)[-1]
        if not (name == "tests.py" or name.startswith("test_") or "/tests/" in f or "/test_" in f):
            continue
        f = f.removesuffix(".py").removeprefix("tests/")
        out.append(f.replace("/", "."))
    return out


def _pick(setting, repo: str, language: str):
    """A benchmark setting: a plain value, or {default, by_repo, by_language}."""
    if not isinstance(setting, dict):
        return setting
    return (
        setting.get("by_repo", {}).get(repo) or setting.get("by_language", {}).get(language) or setting.get("default")
    )


def _fill(template: str | None, values: dict) -> str | None:
    if template is None:
        return None
    try:
        return template.format(**values)
    except KeyError as err:
        raise DatasetError(f"template {template!r} uses {err}, which is not one of {', '.join(values)}") from None


def _values(row: dict, instance_id: str, repo: str, tests: list[str], selected: list[str]) -> dict:
    return {
        "instance_id": instance_id,
        "instance_id_lower": instance_id.lower(),
        "instance_id_1776": instance_id.replace("__", "_1776_"),
        "repo": repo,
        "repo_name": repo.rsplit("/", 1)[-1],
        "base_commit": row.get("base_commit", ""),
        "dockerhub_tag": row.get("dockerhub_tag") or "",
        "test_files": " ".join(tests),
        "test_files_csv": ",".join(selected or tests),
        "test_modules": " ".join(_django_modules(tests)),
        "selected": " ".join(selected),
        "test_names_regex": "^(" + "|".join(re.escape(s) for s in selected) + ")$" if selected else "",
    }


def to_instance(row: dict, bench: dict | None = None, *, base_dir: Path | None = None) -> RepairInstance:
    """Map one row to a repair instance; `bench` is a benchmark config (configs/benchmarks/*.yaml)."""
    bench = bench or {}
    family = bench.get("family") or detect_family(row)
    if family not in FAMILIES:
        raise DatasetError(f"unknown family {family!r}; one of {', '.join(FAMILIES)}")
    iid = str(row.get("instance_id") or "")
    if not iid:
        raise DatasetError("a row has no instance_id")
    for key in ("repo", "base_commit", "patch", "test_patch"):
        if key not in row:
            raise DatasetError(f"row {iid}: missing field {key} (is this a {family} row?)")
    repo = row["repo"]
    if family == "pro":
        f2p = decode_tests(row.get("fail_to_pass"), "fail_to_pass", iid)
        p2p = decode_tests(row.get("pass_to_pass"), "pass_to_pass", iid)
        language = (row.get("repo_language") or bench.get("language") or "").lower()
        selected = decode_tests(row.get("selected_test_files_to_run"), "selected_test_files_to_run", iid)
        setup = [(row.get("before_repo_set_cmd") or "").strip().split("\n")[-1]]  # as the official harness does
        setup = [s for s in setup if s.strip()]
    else:
        f2p = decode_tests(row.get("FAIL_TO_PASS"), "FAIL_TO_PASS", iid)
        p2p = decode_tests(row.get("PASS_TO_PASS"), "PASS_TO_PASS", iid)
        language = (row.get("language") or bench.get("language") or "").lower()
        selected, setup = [], []
    tests = directives_of(row["test_patch"])
    values = _values(row, iid, repo, tests, selected)
    install = row.get("install_config") or {}
    if isinstance(install, str):
        install = json.loads(install)
    if family == "rebench-v2":
        commands = install.get("test_cmd")
        test_cmd = " ; ".join(commands) if isinstance(commands, list) else commands
        parser = install.get("log_parser")
        image = row.get("image_name")
        workdir = f"/{values['repo_name']}"
    else:
        test_cmd = _fill(_pick(bench.get("test_cmd"), repo, language), values)
        parser = _pick(bench.get("log_parser"), repo, language)
        image = _fill(_pick(bench.get("image"), repo, language), values)
        workdir = bench.get("workdir")
    # A row's own test command and parser win (local repositories, a user's own rows).
    test_cmd = _fill(row.get("test_cmd"), values) if row.get("test_cmd") else test_cmd
    parser = row.get("log_parser") or parser
    image = row.get("image") or image
    repo_path = row.get("repo_path") or None
    if repo_path and base_dir is not None and not Path(repo_path).is_absolute():
        repo_path = str((base_dir / repo_path).resolve())
    if not test_cmd or not parser:
        raise DatasetError(
            f"row {iid}: no test command or log parser for {repo} ({language or 'unknown language'}); "
            "set test_cmd/log_parser in the benchmark config or on the row"
        )
    parser_for(parser)  # an unknown parser is an error now, not at grading time
    if not repo_path and not image:
        raise DatasetError(f"row {iid}: neither an image nor a local repo_path to run it in")
    if not language:
        language = infer_language(repo, row["patch"] or "", row["test_patch"] or "", repo_path, row["base_commit"])
    return RepairInstance(
        instance_id=iid,
        family=family,
        repo=repo,
        language=language,
        problem_statement=row.get("problem_statement") or "",
        base_commit=row["base_commit"],
        test_patch=row["test_patch"] or "",
        gold_patch=row["patch"] or "",
        fail_to_pass=f2p,
        pass_to_pass=p2p,
        test_cmd=test_cmd,
        log_parser=parser,
        image=image,
        workdir=None if repo_path else workdir,
        repo_path=repo_path,
        test_setup=setup,
        # The benchmark's pre_test sets up its image (e.g. SWE-bench's conda activation): a local row has no image.
        pre_test=[] if repo_path else list(bench.get("pre_test") or []),
        build_cmd=_fill(_pick(bench.get("build_cmd"), repo, language), values) or _join(install.get("install")),
        binds=_binds(row.get("binds"), iid),
        meta=_meta(row, selected),
    )


def _most_common_language(paths: list[str]) -> str | None:
    counts = Counter(EXTENSION_LANGUAGES.get(Path(p).suffix.lower()) for p in paths)
    counts.pop(None, None)
    return counts.most_common(1)[0][0] if counts else None


def infer_language(repo: str, gold_patch: str, test_patch: str, repo_path: str | None, base_commit: str) -> str:
    """A row's language when neither it nor its benchmark says: the SWE-bench family's repositories are Python;
    else the language of most source files the gold and test patches touch; else of the local repository's files
    at the base commit; else "unknown"."""
    if repo in SWEBENCH_PYTHON_REPOS:
        return "python"
    for patch in (gold_patch, test_patch):
        if language := _most_common_language(files_after(patch)):
            return language
    if repo_path and Path(repo_path, ".git").exists():
        done = subprocess.run(
            ["git", "-c", "core.fsmonitor=false", "-C", repo_path, "ls-tree", "-r", "--name-only", base_commit],
            capture_output=True,
            text=True,
            timeout=120,
        )
        if done.returncode == 0 and (language := _most_common_language(done.stdout.splitlines())):
            return language
    return "unknown"


def _binds(value, instance_id: str) -> list[str]:
    """A row's `binds`: a list of absolute host paths (or a JSON string of one, as a CSV cell holds it)."""
    if value in (None, ""):
        return []
    if isinstance(value, str):
        try:
            value = json.loads(value) if value.lstrip().startswith("[") else [value]
        except json.JSONDecodeError:
            raise DatasetError(f"row {instance_id}: binds is not a list of paths (got {value[:80]!r})") from None
    if not isinstance(value, list) or not all(isinstance(b, str) and b.startswith("/") for b in value):
        raise DatasetError(f"row {instance_id}: binds must be a list of absolute paths (got {str(value)[:80]!r})")
    return list(value)


def _meta(row: dict, selected: list[str]) -> dict:
    keys = ("version", "created_at", "difficulty", "dockerhub_tag", "issue_categories")
    # datasets' JSON loader turns ISO dates into datetimes; the record stays JSON.
    meta = {
        k: row[k].isoformat() if hasattr(row[k], "isoformat") else row[k] for k in keys if row.get(k) not in (None, "")
    }
    if selected:
        meta["selected"] = ",".join(selected)
    return meta


def _join(commands) -> str | None:
    if isinstance(commands, list):
        return " && ".join(c for c in commands if c) or None
    return commands or None
