"""A project's own environment in the sandbox, for `terminus exec` and `terminus mcp`: `--bind HOST[:INSIDE]` checked
against the repository, and the project's `.venv` and `node_modules` found and bound read-only where the project
expects them (`/workspace/.venv`), with a note that says so.

Why: the workspace is a copy of the files git sees, so a project's ignored `.venv` and `node_modules` stay out, and
its tests would run with terminus's own interpreter and no packages. Bound read-only they are the project's own,
and the copy stays the only thing a command can change. A `target/` folder (cargo's build) is named and not bound:
cargo writes into it on every build, test and check, so a read-only one would stop them all; the sandbox builds
its own.

The repository is not trusted (a cloned project may hold anything), so what is bound is decided on the host:

- a found folder that is a link is never bound (a `.venv` linking to `~/.ssh` would show it read-only); the note
  names where it leads, and `--bind` binds it if the user means it;
- a `--bind` path that passes through the repository must stay in it once resolved (a link in the repository that
  leads outside is refused), and the resolved folder is what gets bound (`binds.parse_bind`);
- nothing a repository's files say is followed: a `.venv`'s interpreter (pyvenv.cfg, its `python` link) outside the
  sandbox's view is named, with the `--bind` that shows it, and the `.venv` is not bound until it can run.

A `.venv`'s own scripts name its host path in their first line (`#!/home/u/proj/.venv/bin/python`), which the
sandbox does not have: `.venv/bin/python -m pytest` runs, `.venv/bin/pytest` may not. An editable install's path
file names the host's source folder: where the sandbox shows it (outside /tmp and /home), that copy is imported.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from terminus.sandbox.binds import INSIDE_WORKSPACE, parse_bind, parse_binds
from terminus.sandbox.bwrap import HIDDEN_HOMES, toolchain_binds, venvs_on_path
from terminus.sandbox.docker import HOST_BINDS, HOST_IMAGE
from terminus.sandbox.errors import SandboxError
from terminus.sandbox.spec import Backend, SandboxSpec

# The folders a project keeps its environment in, and what each is.
ENV_FOLDERS = {".venv": "Python virtual environment", "node_modules": "node packages"}
BUILD_FOLDERS = {"target": "cargo's build folder"}  # named, never bound (the module doc)
# What bwrap gives each sandbox its own of: a host path under these is out of a command's view unless bound.
BWRAP_PRIVATE = ("/tmp", "/run", *HIDDEN_HOMES)
# The exit statuses of a command that could not start: its program, or its interpreter, was not found or not run.
NOT_STARTED = (126, 127)


@dataclass(frozen=True)
class ProjectEnv:
    """The binds to add (`HOST:INSIDE:ro`, resolved) and a note for the user on each folder found."""

    binds: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()


def _within(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def checked_binds(specs: list[str] | tuple[str, ...] | None, repo: Path, flag: str = "--bind") -> list[str]:
    """Each `HOST[:INSIDE]` of the user's, as `REAL_HOST:INSIDE:ro`: HOST may be relative (to the current folder);
    INSIDE defaults to HOST as given. SandboxError naming the bind when `binds.parse_bind` refuses it, or when
    HOST passes through the repository and resolves outside it (a link in the repository leading out)."""
    root = os.path.realpath(repo)
    out: list[str] = []
    for spec in specs or ():
        host, sep, rest = spec.partition(":")
        given = os.path.abspath(os.path.expanduser(host)) if host else host
        bind = parse_bind(f"{given}{sep}{rest}" if sep else given)
        if _enters(given, root) and not _within(bind.host, root):
            raise SandboxError(
                f"{flag} {spec}: a link in the repository leads outside it (to {bind.host}); the repository is "
                f"not trusted to choose host paths: bind {bind.host} itself if you mean it"
            )
        out.append(f"{bind.host}:{bind.inside}:ro")
    return list(dict.fromkeys(out))


def _enters(path: str, root: str) -> bool:
    """True when `path`, followed component by component on the host, reaches the repository `root` (resolved)."""
    parts = Path(path).parts
    return any(_within(os.path.realpath(os.path.join(*parts[:k])), root) for k in range(1, len(parts) + 1))


def project_env(repo: Path, spec: SandboxSpec, backend: Backend, copy: str = "git") -> ProjectEnv:
    """The project's `.venv` and `node_modules` to bind at the workspace, read-only, and a note on each folder
    found (bound, or why not); the spec's binds (the user's, checked) count as shown. Nothing for a whole copy
    (`copy="all"`), which holds these folders already."""
    if copy == "all":
        return ProjectEnv()
    root = os.path.realpath(repo)
    binds: list[str] = []
    notes: list[str] = []
    for name, what in ENV_FOLDERS.items():
        folder = os.path.join(root, name)
        if not os.path.lexists(folder):
            continue
        inside = f"{INSIDE_WORKSPACE}/{name}"
        if any(b.inside == inside for b in parse_binds(spec.binds)):
            notes.append(f"{name} ({what}): bound at {inside} as --bind asks")
            continue
        if os.path.islink(folder):
            notes.append(
                f"{name} ({what}) not bound: it is a link (to {os.path.realpath(folder)}), and a link in the "
                f"repository never chooses a host path; if you trust it: --bind {os.path.realpath(folder)}:{inside}"
            )
            continue
        if not os.path.isdir(folder):
            continue
        if not backend.takes_binds:
            notes.append(f"{name} ({what}) not bound: the {backend} sandbox takes no binds (bwrap and docker do)")
            continue
        unseen = _venv_interpreter_unseen(folder, spec, backend) if name == ".venv" else None
        if unseen:
            notes.append(
                f"{name} ({what}) not bound: its interpreter {unseen} is outside the {backend} sandbox's view; "
                f"show it with --bind {_top(unseen)} (read-only), and {name} is bound"
            )
            continue
        binds.append(f"{folder}:{inside}:ro")
        how = " (run its tools as .venv/bin/python -m NAME)" if name == ".venv" else ""
        notes.append(f"{name} ({what}) bound read-only at {inside}{how}")
    for name, what in BUILD_FOLDERS.items():
        if os.path.isdir(os.path.join(root, name)) and not os.path.islink(os.path.join(root, name)):
            notes.append(
                f"{name}/ ({what}) not bound: cargo writes into it on every build, so a read-only one would stop "
                "them all; the sandbox builds its own"
            )
    return ProjectEnv(tuple(binds), tuple(notes))


def _venv_interpreter_unseen(venv: str, spec: SandboxSpec, backend: Backend) -> str | None:
    """The host path of the `.venv`'s interpreter (its `bin/python` link resolved on the host) when the sandbox
    would not show it there, else None. A `.venv` with no `bin/python` runs nothing: None, and it is bound as it is."""
    python = next((p for p in ("python", "python3") if os.path.lexists(os.path.join(venv, "bin", p))), None)
    if python is None:
        return None
    real = os.path.realpath(os.path.join(venv, "bin", python))
    if _within(real, venv):  # a venv made with --copies holds its own interpreter
        return None
    return None if visible(real, spec, backend) else real


def visible(path: str, spec: SandboxSpec, backend: Backend) -> bool:
    """Whether a command sees host `path` at the same path: under one of the spec's binds that is seen where it is
    on the host, or bwrap's read-only system outside its private folders (with the toolchains it binds: rustup,
    pyenv, PATH's); docker's host image shows only binds (its /usr among them). Another image's own files are not
    known here: only the host's private folders (/tmp, /home, /root, /run) are surely not in it."""
    shown = [b for b in parse_binds(spec.binds) if b.inside == b.host]
    if backend is Backend.DOCKER and (spec.image or HOST_IMAGE) == HOST_IMAGE:
        shown += [b for b in parse_binds([h for h in HOST_BINDS if os.path.exists(h.partition(":")[0])])]
    if any(_within(path, b.host) for b in shown):
        return True
    if backend is Backend.BWRAP:
        path_var = os.environ.get("PATH", "")
        if any(_within(path, top) for top in toolchain_binds(path_var, venvs_on_path(path_var))):
            return True
    if backend is Backend.DOCKER and (spec.image or HOST_IMAGE) == HOST_IMAGE:
        return False
    return not any(_within(path, private) for private in BWRAP_PRIVATE)


def _top(path: str) -> str:
    """What to bind for an interpreter: its install's folder (`.../cpython-3.12/bin/python3.12` -> `.../cpython-3.12`),
    the parent of its `bin`."""
    parent = os.path.dirname(path)
    return os.path.dirname(parent) if os.path.basename(parent) == "bin" else parent


def unseen_host_paths(box, commands: list[tuple[int | None, str]]) -> list[str]:
    """Host paths that commands which could not start (exit 126 or 127) named, and which the sandbox hides (bwrap's
    private /tmp and /home): what to --bind. `commands`: (exit code, output) of each command run."""
    found: list[str] = []
    for code, output in commands:
        if code in NOT_STARTED:
            found += box.hidden_host_paths(output)
    return list(dict.fromkeys(found))
