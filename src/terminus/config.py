"""Experiment configs: read, validate against the typed config (`terminus.settings`, each default's one home; the
JSON schema configs/schema/config.schema.json is generated from it), fill defaults, hash; and how a path the user
gives is found (`resolve`, `resolve_model`): from the working folder, never from where the package is installed (a
second checkout sharing one virtual environment writes into itself). `ROOT` is the package's own checkout, for the
files it ships (schema, prompts, templates) only.

Imported by the agent loop and every stage, so only light modules load at import time (pydantic and the models
take well under a tenth of a second; jsonschema, which takes seconds, is not used)."""

from __future__ import annotations

import copy
import hashlib
import json
import os
import subprocess
from pathlib import Path

import yaml
from pydantic import ValidationError

from terminus.errors import TerminusError
from terminus.settings import Config, filled

ROOT = Path(__file__).resolve().parents[2]  # the package's checkout: the schema, prompts and templates it ships
SCHEMA = ROOT / "configs" / "schema" / "config.schema.json"  # generated from terminus.settings.Config
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


def fill_defaults(raw: dict, source: str) -> dict:
    """A copy of `raw` validated against the typed config (`terminus.settings.Config`) with every default filled in
    (paths as written): the one validation of a config, for the CLI (`load_config`) and the workflow (Snakefile)
    alike. Errors name `source`, the key and the problem."""
    return filled(validate(raw, source))


def validate(raw, source: str) -> Config:
    """`raw` as the frozen, typed config (`terminus.settings.Config`); a ConfigError naming `source`, each wrong key
    and its problem otherwise."""
    if not isinstance(raw, dict):
        raise ConfigError(f"{source} holds {type(raw).__name__}, not a mapping of settings")
    try:
        return Config.model_validate(raw)
    except ValidationError as err:
        raise ConfigError(f"{source}: " + "; ".join(problems(err))) from None


def problems(err) -> list[str]:
    """One entry per wrong key (the first five): `eval.subagents.1.modle: unknown key ...`. The branches of a
    union (an int or a float; an endpoint or null) report one failure each; they are joined into one entry."""
    by_key: dict[str, list[str]] = {}
    for problem in err.errors():
        # A location's parts are keys, list indices and the tags of union branches (`int`, `Endpoint`, ...):
        # keys and indices name where the problem is.
        parts = [str(p) for p in problem["loc"] if isinstance(p, int) or (p.isidentifier() and p.islower())]
        parts = [p for p in parts if p not in UNION_TAGS]
        message = problem["msg"].removeprefix("Value error, ")
        named, sep, rest = message.partition(": ")
        if problem["type"] == "value_error" and sep and named.isidentifier():  # a model's own check names its key
            parts, message = [*parts, named], rest
        key = ".".join(parts) or "(top level)"
        if problem["type"] == "not_unique":  # `eval.seeds has 0 twice; ...`: the list is named in the message
            by_key.setdefault(".".join([*parts, problem["ctx"]["key"]]), []).append(message.partition(" ")[2])
            continue
        if problem["type"] == "extra_forbidden":
            message = "unknown key (not a setting of this section)"
        elif problem["type"] == "missing":
            message = "required, missing"
        elif problem["type"] == "literal_error":
            message = f"{problem['input']!r} is not one of: {problem['ctx']['expected']}"
        by_key.setdefault(key, [])
        if message not in by_key[key]:
            by_key[key].append(message)
    return [
        f"{key} {messages[0]}" if messages[0].startswith("has ") else f"{key}: {' or '.join(messages)}"
        for key, messages in list(by_key.items())[:5]
    ]


UNION_TAGS = {"int", "float", "str", "bool", "none", "list", "dict"}


def merge_sets(raw: dict, sets: list[str] | tuple[str, ...], source: str) -> dict:
    """`raw` with each `KEY=VALUE` of `sets` (`--set eval.concurrency=8`; VALUE read as YAML) put in, before
    validation: a key the config does not know is then an error naming it, as in the file."""
    out = copy.deepcopy(raw)
    for item in sets:
        key, sep, text = item.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"--set {item!r}: give KEY=VALUE (a dotted key such as eval.concurrency=8)")
        try:
            value = yaml.load(text, Loader=_loader(f"--set {key}"))
        except yaml.YAMLError as err:
            raise ConfigError(f"--set {item!r}: the value is not valid YAML ({' '.join(str(err).split())})") from None
        node = out
        parts = key.strip().split(".")
        for i, part in enumerate(parts[:-1]):
            child = node.get(part)
            if child is None:
                child = node[part] = {}
            if not isinstance(child, dict):
                where = ".".join(parts[: i + 1])
                raise ConfigError(f"--set {key}: {where} in {source} is not a section (it holds a value)")
            node = child
        node[parts[-1]] = value
    return out


def load_config(path: Path | str | None = None, sets: list[str] | tuple[str, ...] = ()) -> dict:
    """The validated config with every default filled in; errors name the file, the key and the problem.
    `sets` (`--set KEY=VALUE`) go in before validation (`merge_sets`). Relative paths, the config's own and those it
    names, are from the working folder (made absolute here)."""
    path = Path(path or DEFAULT).expanduser().absolute()
    if not path.is_file():
        raise ConfigError(f"config file {path} does not exist")
    raw = load_yaml(path, "config file") or {}
    if not isinstance(raw, dict):
        raise ConfigError(f"config file {path} holds {type(raw).__name__}, not a mapping of settings")
    filled = fill_defaults(merge_sets(raw, sets, str(path)) if sets else raw, str(path))
    config = _fill_run(filled, filled["run"])
    # Hashed before paths become absolute, so the same config has the same hash on every machine and checkout.
    digest = config_digest(config)
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
    return filled | private | {"_hash": config_digest(filled)}


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


def config_digest(config: dict) -> str:
    public = {k: v for k, v in config.items() if not k.startswith("_")}
    return hashlib.sha256(json.dumps(public, sort_keys=True).encode()).hexdigest()[:12]


def config_hash(config: dict) -> str:
    """A short hash of the config's content (defaults filled, paths as written), stamped on every table."""
    return config.get("_hash") or config_digest(config)


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
