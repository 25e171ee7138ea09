"""Experiment configs: read, validate against configs/schema/config.schema.yaml, fill defaults, hash. Also the
repository root (`ROOT`) and how relative paths are found (`resolve`, `resolve_model`: the working folder first).

Imported by the agent loop and every stage, so only light modules load at import time (jsonschema takes
seconds to import; it loads when a config is read)."""

from __future__ import annotations

import copy
import functools
import hashlib
import json
import os
import subprocess
from pathlib import Path

import yaml

from terminus.errors import TerminusError

ROOT = Path(__file__).resolve().parents[2]  # the repository: configs/, results/, examples/
SCHEMA = ROOT / "configs" / "schema" / "config.schema.yaml"
DEFAULT = ROOT / "configs" / "config.yaml"


class ConfigError(TerminusError, ValueError):
    pass


def _with_defaults(validator_class):
    import jsonschema

    validate_properties = validator_class.VALIDATORS["properties"]

    def set_defaults(validator, properties, instance, schema):
        if isinstance(instance, dict):
            for key, sub in properties.items():
                if "default" in sub and key not in instance:
                    instance[key] = copy.deepcopy(sub["default"])
                elif sub.get("type") == "object" and key not in instance and "properties" in sub:
                    instance[key] = {}
        yield from validate_properties(validator, properties, instance, schema)

    return jsonschema.validators.extend(validator_class, {"properties": set_defaults})


@functools.cache
def _filling_validator():
    """The schema's validator that also fills in defaults (made once, on first use)."""
    import jsonschema

    return _with_defaults(jsonschema.Draft202012Validator)


def load_config(path: Path | str | None = None) -> dict:
    """The validated config with every default filled in; errors name the file, the key and the problem."""
    path = Path(path or DEFAULT)
    if not path.is_file() and not path.is_absolute() and (ROOT / path).is_file():
        path = ROOT / path  # configs/... from any working directory
    if not path.is_file():
        raise ConfigError(f"config file {path} does not exist")
    try:
        raw = yaml.safe_load(path.read_text()) or {}
    except yaml.YAMLError as err:
        raise ConfigError(f"{path} is not valid YAML: {err}") from None
    schema = yaml.safe_load(SCHEMA.read_text())
    config = copy.deepcopy(raw)
    errors = sorted(_filling_validator()(schema).iter_errors(config), key=lambda e: list(e.absolute_path))
    if errors:
        lines = []
        for err in errors[:5]:
            key = ".".join(str(p) for p in err.absolute_path) or "(top level)"
            lines.append(f"  {key}: {err.message}")
        raise ConfigError(f"{path} does not match {SCHEMA.relative_to(ROOT)}:\n" + "\n".join(lines))
    _check_unique(config, path)
    config = _fill_run(config, config["run"])
    # Hashed before paths become absolute, so the same config has the same hash on every machine and checkout.
    digest = _digest(config)
    _resolve_paths(config)
    config["_path"] = str(path)
    config["_hash"] = digest
    return config


# Lists whose entries name the eval grid's cells (and so their record and prediction files): a repeat would make
# two cells of one name, one of which is silently lost.
UNIQUE_LISTS = (("main_agents", "name"), ("subagents", "name"), ("benchmarks", None), ("seeds", None))


def _check_unique(config: dict, path: Path) -> None:
    section = config.get("eval") or {}
    for key, field in UNIQUE_LISTS:
        seen = set()
        for entry in section.get(key) or []:
            value = entry.get(field) if field and isinstance(entry, dict) else entry
            if value in seen:
                what = f"two entries named {value!r}" if field else f"{value!r} twice"
                raise ConfigError(f"{path}: eval.{key} has {what}; each must be unique (it names the eval cells)")
            seen.add(value)


def _fill_run(node, run: str):
    """`{run}` in any string of the config is the run name (paths like results/{run}/models/base)."""
    if isinstance(node, dict):
        return {k: _fill_run(v, run) for k, v in node.items()}
    if isinstance(node, list):
        return [_fill_run(v, run) for v in node]
    return node.replace("{run}", run) if isinstance(node, str) else node


PATH_KEYS = (
    ("tasks", "registry", "packages"),
    ("judge", "rubric"),
    ("judge", "scorer"),
    ("judge", "prompts"),
    ("judge", "serve"),
)


def resolve(path: str | Path) -> Path:
    """A path the user gave: absolute as is; else from the working folder, where it exists there or nowhere (so a
    run's outputs land in the checkout it was started in), else from the repository root (the configs shipped with
    the package, found from any working folder). Taking everything from the root let a second checkout sharing one
    virtual environment write its models into the first checkout's results/ and resume from its checkpoints."""
    path = Path(path).expanduser()
    if path.is_absolute():
        return path
    here = Path.cwd() / path
    return ROOT / path if not here.exists() and (ROOT / path).exists() else here


def resolve_model(name: str | Path) -> str:
    """A path that may also be a hub id (a recipe's model, dataset or task file; an eval subagent's model): one
    that exists, from the working directory or else from the repository root, as an absolute path; anything else
    as given, so that a hub id such as `Qwen/Qwen3-4B` stays one."""
    given = Path(name).expanduser()
    path = resolve(given)  # from the working folder first, as `resolve` now takes every relative path
    if path.exists():
        return str(path)
    return str(given) if given.is_absolute() else str(name)


def _resolve_paths(config: dict) -> None:
    for keys in PATH_KEYS:
        node = config
        for key in keys[:-1]:
            node = node.get(key) or {}
        if node.get(keys[-1]):
            node[keys[-1]] = str(resolve(node[keys[-1]]))
    tasks = config.get("tasks") or {}
    if tasks.get("manifests"):
        tasks["manifests"] = [str(resolve(p)) for p in tasks["manifests"]]


def _digest(config: dict) -> str:
    public = {k: v for k, v in config.items() if not k.startswith("_")}
    return hashlib.sha256(json.dumps(public, sort_keys=True).encode()).hexdigest()[:12]


def config_hash(config: dict) -> str:
    """A short hash of the config's content (defaults filled, paths as written), stamped on every table."""
    return config.get("_hash") or _digest(config)


def git_commit() -> str:
    if os.environ.get("TERMINUS_GIT_COMMIT"):  # a copy of the tree without .git (scripts/reproduce_check.py)
        return os.environ["TERMINUS_GIT_COMMIT"]
    try:
        done = subprocess.run(
            ["git", "-C", str(ROOT), "rev-parse", "--short=12", "HEAD"], capture_output=True, text=True, timeout=10
        )
        dirty = subprocess.run(
            ["git", "-C", str(ROOT), "status", "--porcelain", "--untracked-files=no"],
            capture_output=True,
            text=True,
            timeout=10,
        ).stdout.strip()
        return (done.stdout.strip() or "unknown") + ("-dirty" if dirty else "")
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"


def run_dir(config: dict) -> Path:
    """results/<run> in the working folder: the checkout the command was started in."""
    return Path.cwd() / "results" / config["run"]


def stamp(config: dict) -> dict:
    return {"config_hash": config_hash(config), "git_commit": git_commit(), "run": config["run"]}
