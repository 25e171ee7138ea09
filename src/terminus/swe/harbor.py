"""Harbor task folders (Terminal-Bench 2.0) as instances of the eval grid.

Terminal-Bench 2.0 publishes 89 tasks (laude-institute/terminal-bench-2, the commit Harbor's registry pins), one
folder each, in Harbor's task format:

    instruction.md      what the agent is told: the instance's problem statement
    task.toml           [metadata] difficulty, category, tags; [agent] timeout_sec; [verifier] timeout_sec, env;
                        [environment] docker_image (prebuilt), workdir, cpus, memory, network_mode
    environment/        the Dockerfile the image was built from (its last WORKDIR is where commands start)
    tests/test.sh       the verifier, copied into /tests only after the agent stops (`harbor_grade`); it writes
                        /logs/verifier/reward.txt (or reward.json)
    solution/solve.sh   the reference solution, never shown to the agent

Instances come from a local folder of task folders (a checkout of that repository, fetched before the run as the
SWE datasets are: `eval.swe.datasets.terminal-bench-2`, else the benchmark config's `dataset`).

No git history is stripped at container start, unlike the SWE benchmarks (`history.hide_history`). There the
repository is a snapshot of a project whose later history holds the fix; here the image is an environment written
for the task, with no upstream fix to leak, and its history is part of some tasks (`fix-git` asks for a commit
that only the reflog still names; `git-leak-recovery`, `sanitize-git-repo` likewise). What would hand the agent the
answer, the tests and the solution, is never in its container: the image is built from `environment/` alone, and
the tests are copied in when the agent has stopped, as Harbor does.
"""

from __future__ import annotations

import logging
import re
import subprocess
import tomllib
from dataclasses import asdict, dataclass, field
from pathlib import Path, PurePosixPath

from terminus.swe.families import DatasetError

log = logging.getLogger(__name__)

FAMILY = "harbor"
# Harbor's defaults where task.toml says nothing (harbor/models/task/config.py: VerifierConfig.timeout_sec 600,
# network_mode "public"); a task whose image names no WORKDIR starts where the benchmark config says.
VERIFIER_TIMEOUT_S = 600.0
DEFAULT_WORKDIR = "/app"
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_WORKDIR = re.compile(r"^\s*WORKDIR\s+(\S+)\s*$", re.IGNORECASE | re.MULTILINE)


@dataclass
class HarborTask:
    instance_id: str
    """The task folder's name (`regex-log`)."""
    instruction: str
    image: str | None
    """[environment].docker_image: the prebuilt image the agent works in and the verifier runs in."""
    workdir: str
    """Where commands start: [environment].workdir, else the Dockerfile's last WORKDIR (the image's own)."""
    task_dir: str
    """The task folder (absolute): the verifier's tests are read from its `tests/` at grading time."""
    verifier_timeout_s: float = VERIFIER_TIMEOUT_S
    agent_timeout_s: float | None = None
    verifier_env: dict[str, str] = field(default_factory=dict)
    network: bool = True
    """Harbor's default: the agent installs what it needs, and TB2's test.sh installs uv and pytest."""
    meta: dict = field(default_factory=dict)
    family: str = FAMILY

    # What the grid's shared code reads of any instance (`RepairInstance` has these as fields).
    @property
    def problem_statement(self) -> str:
        return self.instruction

    @property
    def language(self) -> str:
        return "shell"  # a terminal task is done in the shell, whatever it builds

    @property
    def binds(self) -> list[str]:
        return []

    @property
    def tests_dir(self) -> Path:
        return Path(self.task_dir) / "tests"

    def to_dict(self) -> dict:
        return asdict(self)


def _read_toml(path: Path) -> dict:
    try:
        return tomllib.loads(path.read_text())
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as err:
        raise DatasetError(f"{path}: not valid TOML: {err}") from None


def image_workdir(dockerfile: Path) -> str | None:
    """The WORKDIR a Dockerfile leaves its image in (the last one; a relative one is joined to the one before)."""
    if not dockerfile.is_file():
        return None
    current: str | None = None
    for match in _WORKDIR.finditer(dockerfile.read_text(errors="replace")):
        path = match.group(1).strip("\"'")
        current = path if path.startswith("/") else str(PurePosixPath(current or "/") / path)
    return current


def _network(env: dict) -> bool:
    """[environment].network_mode (public | no-network | allowlist), or the older allow_internet; default public."""
    if "network_mode" in env:
        return env["network_mode"] != "no-network"
    return bool(env.get("allow_internet", True))


def load_task(folder: Path, default_workdir: str = DEFAULT_WORKDIR) -> HarborTask:
    """One task folder; DatasetError naming the file that is missing or malformed."""
    folder = folder.resolve()
    for needed in ("task.toml", "instruction.md", "tests/test.sh"):
        if not (folder / needed).is_file():
            raise DatasetError(f"Harbor task {folder}: no {needed}")
    config = _read_toml(folder / "task.toml")
    env = config.get("environment") or {}
    verifier = config.get("verifier") or {}
    agent = config.get("agent") or {}
    verifier_env = verifier.get("env") or {}
    if not all(isinstance(k, str) and _NAME.match(k) for k in verifier_env):
        raise DatasetError(f"Harbor task {folder.name}: [verifier].env has a name that is no shell variable")
    if any("${" in str(v) for v in verifier_env.values()):
        # Harbor fills ${VAR} from the host's environment; nothing of the host's reaches our verifier
        raise DatasetError(f"Harbor task {folder.name}: [verifier].env takes values from the host, not supported")
    workdir = env.get("workdir") or image_workdir(folder / "environment" / "Dockerfile") or default_workdir
    if not env.get("docker_image"):
        raise DatasetError(
            f"Harbor task {folder.name}: no [environment].docker_image; build environment/Dockerfile and name the "
            "image there"
        )
    meta = dict(config.get("metadata") or {})
    return HarborTask(
        instance_id=folder.name,
        instruction=(folder / "instruction.md").read_text(),
        image=env["docker_image"],
        workdir=workdir,
        task_dir=str(folder),
        verifier_timeout_s=float(verifier.get("timeout_sec") or VERIFIER_TIMEOUT_S),
        agent_timeout_s=float(agent["timeout_sec"]) if agent.get("timeout_sec") else None,
        verifier_env={str(k): str(v) for k, v in verifier_env.items()},
        network=_network(env),
        meta=meta,
    )


def fetch_hint(cfg: dict, folder: Path) -> str:
    source, commit = cfg.get("source"), cfg.get("commit")
    if not source:
        return ""
    return f"; fetch it with: git clone {source} {folder} && git -C {folder} checkout {commit}"


def _check_commit(folder: Path, cfg: dict) -> None:
    """A git checkout at another commit than the config pins is another benchmark version: say so."""
    if not cfg.get("commit") or not (folder / ".git").exists():
        return
    done = subprocess.run(
        ["git", "-c", "core.fsmonitor=false", "-C", str(folder), "rev-parse", "HEAD"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    if done.returncode == 0 and done.stdout.strip() != cfg["commit"]:
        log.warning("%s is at commit %s, not %s as %s pins", folder, done.stdout.strip(), cfg["commit"], cfg["name"])


def load_harbor_tasks(
    folder: str | Path, cfg: dict | None = None, *, ids: list[str] | None = None, limit: int | None = None
) -> list[HarborTask]:
    """The task folders under `folder` (each with a task.toml), sorted by name; `cfg` is the benchmark config."""
    cfg = cfg or {}
    folder = Path(folder).expanduser()
    if not folder.is_dir():
        raise DatasetError(f"{cfg.get('name', 'Harbor')} tasks: {folder} is not a folder{fetch_hint(cfg, folder)}")
    dirs = sorted(p for p in folder.iterdir() if p.is_dir() and (p / "task.toml").is_file())
    if not dirs:
        raise DatasetError(f"{folder} has no task folders (none holds a task.toml){fetch_hint(cfg, folder)}")
    expected = cfg.get("tasks")
    if expected and len(dirs) != expected and not ids and not limit:
        log.warning("%s holds %d tasks; %s has %d", folder, len(dirs), cfg.get("name"), expected)
    _check_commit(folder, cfg)
    if ids:
        wanted = set(ids)
        dirs = [d for d in dirs if d.name in wanted]
    if limit:
        dirs = dirs[:limit]
    return [load_task(d, cfg.get("workdir") or DEFAULT_WORKDIR) for d in dirs]
