"""Experiment configs: read, validate against configs/schema/config.schema.yaml, fill defaults, hash; each default's
one home (`schema_default`); and how a path the user gives is found (`resolve`, `resolve_model`): from the working
folder, never from where the package is installed (a second checkout sharing one virtual environment writes into
itself). `ROOT` is the package's own checkout, for the files it ships (schema, prompts, templates) only.

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

ROOT = Path(__file__).resolve().parents[2]  # the package's checkout: the schema, prompts and templates it ships
SCHEMA = ROOT / "configs" / "schema" / "config.schema.yaml"
DEFAULT = Path("configs") / "config.yaml"  # the smoke config of the project in the working folder


class ConfigError(TerminusError, ValueError):
    pass


# How many nodes a config or recipe may hold with its aliases expanded. The largest shipped config has a few
# thousand; a "billion laughs" file (anchors of aliases of anchors) has billions, which YAML loads as shared objects
# in a blink and everything after (schema validation, the hash, filling in `{run}`) then walks one by one.
MAX_YAML_NODES = 200_000


class _BoundedLoader(yaml.SafeLoader):
    """PyYAML's safe loader that refuses a document whose aliases expand past MAX_YAML_NODES, or refer to
    themselves, before anything is built from it."""

    def get_single_node(self):
        node = super().get_single_node()
        if node is not None:
            size = _expanded_size(node, {}, set())
            if size > MAX_YAML_NODES:
                raise ConfigError(
                    f"{self.name}: its aliases expand to over {MAX_YAML_NODES:,} nodes ({size:,}); refusing to load it"
                )
        return node


def _expanded_size(node: yaml.Node, sizes: dict[int, int], open_: set[int]) -> int:
    """The node count of `node` with every alias expanded, in time linear in the document (each shared node is
    counted once and its size reused). Iterative: a deeply nested file must not exhaust the stack."""
    stack = [(node, False)]
    while stack:
        current, children_done = stack.pop()
        key = id(current)
        if key in sizes:
            continue
        children = [] if isinstance(current, yaml.ScalarNode) else current.value
        if isinstance(current, yaml.MappingNode):
            children = [n for pair in children for n in pair]
        if children_done:
            open_.discard(key)
            sizes[key] = 1 + sum(sizes[id(c)] for c in children)
            continue
        if key in open_:
            raise ConfigError(f"{current.start_mark.name}: an alias refers to the node that holds it; refusing it")
        open_.add(key)
        stack.append((current, True))
        stack += [(c, False) for c in children if id(c) not in sizes]
    return sizes[id(node)]


def load_yaml(path: Path | str, what: str = "file"):
    """A config or recipe file's content, read as every project file is: UTF-8, safe YAML, aliases bounded. Errors
    (a missing file, bytes that are not UTF-8, a syntax error, an alias bomb) are one ConfigError naming the file."""
    path = Path(path)
    try:
        text = path.read_bytes().decode("utf-8")
    except FileNotFoundError:
        raise ConfigError(f"{what} {path} does not exist") from None
    except UnicodeDecodeError as err:
        raise ConfigError(f"{what} {path} is not UTF-8 text (byte {err.start + 1})") from None
    except OSError as err:
        raise ConfigError(f"cannot read {what} {path}: {err.strerror}") from None
    try:
        return yaml.load(text, Loader=_loader(str(path)))  # a SafeLoader
    except yaml.MarkedYAMLError as err:
        mark = err.problem_mark
        where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark else ""
        raise ConfigError(f"{what} {path} is not valid YAML: {err.problem or err.context}{where}") from None
    except yaml.YAMLError as err:
        raise ConfigError(f"{what} {path} is not valid YAML: {' '.join(str(err).split())}") from None


def _loader(name: str):
    def make(stream):
        loader = _BoundedLoader(stream)
        loader.name = name
        return loader

    return make


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


@functools.cache
def _schema() -> dict:
    return yaml.safe_load(SCHEMA.read_text())


def schema_default(*keys: str):
    """The schema's default of a config key (`schema_default("collect", "max_turns")`): where a command-line flag
    that may run without a config takes its default, so that each default lives once, in the schema."""
    node = _schema()
    for key in keys:
        node = node.get("items", node)["properties"][key]  # a list's entries: ("eval", "subagents", "name")
    return copy.deepcopy(node["default"])


def fill_defaults(raw: dict, source: str) -> dict:
    """A copy of `raw` validated against the schema with every default filled in (paths as written): the one
    validation of a config, for the CLI (`load_config`) and the workflow (Snakefile) alike. Errors name `source`,
    the key and the problem."""
    config = copy.deepcopy(raw)
    errors = sorted(_filling_validator()(_schema()).iter_errors(config), key=lambda e: list(e.absolute_path))
    if errors:
        lines = []
        for err in errors[:5]:
            key = ".".join(str(p) for p in err.absolute_path) or "(top level)"
            lines.append(f"  {key}: {err.message}")
        raise ConfigError(f"{source} does not match {SCHEMA.relative_to(ROOT)}:\n" + "\n".join(lines))
    _check_unique(config, source)
    return config


def load_config(path: Path | str | None = None) -> dict:
    """The validated config with every default filled in; errors name the file, the key and the problem.
    Relative paths, the config's own and those it names, are from the working folder (made absolute here)."""
    path = Path(path or DEFAULT).expanduser().absolute()
    if not path.is_file():
        raise ConfigError(f"config file {path} does not exist")
    raw = load_yaml(path, "config file") or {}
    if not isinstance(raw, dict):
        raise ConfigError(f"config file {path} holds {type(raw).__name__}, not a mapping of settings")
    filled = fill_defaults(raw, str(path))
    config = _fill_run(filled, filled["run"])
    # Hashed before paths become absolute, so the same config has the same hash on every machine and checkout.
    digest = _digest(config)
    base = Path.cwd()
    _resolve_paths(config, base)
    config["_path"] = str(path)
    config["_hash"] = digest
    config["_base"] = str(base)  # where results/<run>/ lives (run_dir)
    return config


def refill(config: dict) -> dict:
    """A loaded config that a script or test has changed (a section replaced, entries added), validated and filled
    again, so that what it added gets its defaults too; its private keys kept, its hash taken anew."""
    public = {k: v for k, v in config.items() if not k.startswith("_")}
    filled = fill_defaults(public, config.get("_path") or "a changed config")
    private = {k: v for k, v in config.items() if k.startswith("_")}
    return filled | private | {"_hash": _digest(filled)}


# Lists whose entries name the eval grid's cells (and so their record and prediction files): a repeat would make
# two cells of one name, one of which is silently lost.
UNIQUE_LISTS = (("main_agents", "name"), ("subagents", "name"), ("benchmarks", None), ("seeds", None))


def _check_unique(config: dict, path: Path | str) -> None:
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


def resolve(path: str | Path, base: Path | None = None) -> Path:
    """A path the user gave: absolute as is, else from `base` (default: the working folder). Never from the
    package's location: a second checkout, or a non-editable install, would read and write another tree."""
    path = Path(path).expanduser()
    return path if path.is_absolute() else (base or Path.cwd()) / path


def resolve_model(name: str | Path) -> str:
    """A path that may also be a hub id (a recipe's model, dataset or task file; an eval subagent's model): one
    that exists from the working folder, as an absolute path; anything else as given, so that a hub id such as
    `Qwen/Qwen3-4B` stays one."""
    path = resolve(name)
    if path.exists():
        return str(path)
    return str(path) if Path(name).expanduser().is_absolute() else str(name)


def _resolve_paths(config: dict, base: Path) -> None:
    for keys in PATH_KEYS:
        node = config
        for key in keys[:-1]:
            node = node.get(key) or {}
        if node.get(keys[-1]):
            node[keys[-1]] = str(resolve(node[keys[-1]], base))
    tasks = config.get("tasks") or {}
    if tasks.get("manifests"):
        tasks["manifests"] = [str(resolve(p, base)) for p in tasks["manifests"]]


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
    """results/<run>/ under the folder the config was loaded from (the working folder then)."""
    return Path(config.get("_base") or Path.cwd()) / "results" / config["run"]


def stamp(config: dict) -> dict:
    return {"config_hash": config_hash(config), "git_commit": git_commit(), "run": config["run"]}
