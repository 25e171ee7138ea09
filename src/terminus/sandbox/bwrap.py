"""`bwrap`: bubblewrap. Read-only system, writable workspace, private /tmp and HOME, PID namespace, no network."""

from __future__ import annotations

import os
import shutil

from terminus.sandbox.base import INSIDE_CONTROL, INSIDE_STATE, ProcessSandbox, SandboxError

WORKSPACE = "/workspace"
HOME = "/home/sandbox"
# Where the Python virtual environments on the harness's PATH appear inside: a fixed path, so that what a command
# prints (`command -v python3`, a traceback into site-packages) is the same in every clone of the repository and
# training data made in /work/main and in a CI checkout elsewhere are the same text. The first is TOOLCHAINS/venv.
TOOLCHAINS = "/toolchains"


def bwrap_path() -> str | None:
    return shutil.which("bwrap")


# Top-level entries of / that the sandbox gets its own (empty or private) version of.
_PRIVATE = {"proc", "dev", "tmp", "run", "home", "workspace", "toolchains", "lost+found"}


def _system_binds() -> list[str]:
    """Read-only binds of every top-level entry of the host's / (symlinks recreated), on a fresh root.

    Binding / itself would leave no way to add /workspace on the read-only root.
    """
    args: list[str] = []
    for entry in sorted(os.scandir("/"), key=lambda e: e.name):
        if entry.name in _PRIVATE:
            continue
        if entry.is_symlink():
            args += ["--symlink", os.readlink(entry.path), entry.path]
        else:
            args += ["--ro-bind", entry.path, entry.path]
    return args


def bind_args(binds: list[str]) -> list[str]:
    """`--ro-bind` arguments for host paths; SandboxError for one that does not exist or is not absolute (bwrap
    would refuse to start, naming no path of ours)."""
    args: list[str] = []
    for bind in binds:
        host, _, rest = bind.partition(":")
        inside, _, mode = rest.partition(":")
        if mode not in ("", "ro"):
            raise SandboxError(f"bind {bind}: bwrap binds are read-only (mode {mode!r} is not supported)")
        if not host.startswith("/") or not (inside or host).startswith("/"):
            raise SandboxError(f"bind {bind}: give an absolute path")
        if not os.path.exists(host):
            raise SandboxError(f"bind {bind}: {host} does not exist on this machine")
        args += ["--ro-bind", host, inside or host]
    return args


def _bin_prefix(entry: str) -> str | None:
    """The folder whose `bin` a PATH entry is (`/a/venv/bin/` -> `/a/venv`), or None."""
    folder = entry.rstrip("/")
    return os.path.dirname(folder) if folder.startswith("/") and os.path.basename(folder) == "bin" else None


def venvs_on_path(path_var: str) -> dict[str, str]:
    """Host prefix -> inside prefix for each Python virtual environment whose `bin` folder is on PATH, in PATH
    order: TOOLCHAINS/venv, TOOLCHAINS/venv-2, ..."""
    venvs: dict[str, str] = {}
    for entry in path_var.split(":"):
        prefix = _bin_prefix(entry)
        if prefix and prefix not in venvs and os.path.isfile(os.path.join(prefix, "pyvenv.cfg")):
            venvs[prefix] = f"{TOOLCHAINS}/venv" + (f"-{len(venvs) + 1}" if venvs else "")
    return venvs


def inside_path(path_var: str, venvs: dict[str, str]) -> str:
    """PATH with each virtual environment's `bin` folder at its inside prefix."""
    entries = []
    for entry in path_var.split(":"):
        prefix = _bin_prefix(entry)
        entries.append(f"{venvs[prefix]}/bin" if prefix in venvs else entry)
    return ":".join(entries)


class BwrapSandbox(ProcessSandbox):
    """The command sees the host's system read-only, and only its own workspace, home and /tmp writable.

    As root, bwrap keeps all capabilities unless told otherwise; `--unshare-user --uid` makes the command an
    ordinary user inside a user namespace, so it cannot remount the read-only system or reach the host's
    network namespace.
    """

    name = "bwrap"
    inside_workspace = WORKSPACE
    inside_state = INSIDE_STATE
    inside_control = INSIDE_CONTROL

    def __init__(self, *args, binds: list[str] | None = None, **kwargs) -> None:
        """`binds`: host paths the command may read although /tmp and /home are private (an interpreter, a venv,
        a toolchain), each `PATH` or docker's `HOST:INSIDE[:ro]`; always read-only."""
        if bwrap_path() is None:
            raise SandboxError("bubblewrap is not installed (Debian: apt-get install bubblewrap); use --sandbox local")
        self.binds = list(binds or [])
        self._bind_args = bind_args(self.binds)
        self.venvs = venvs_on_path(os.environ.get("PATH", ""))
        super().__init__(*args, **kwargs)

    def env(self) -> dict[str, str]:
        env = super().env()
        env["PATH"] = inside_path(env["PATH"], self.venvs)
        return env

    @property
    def inside_home(self) -> str:
        return HOME

    @property
    def inside_tmp(self) -> str:
        return "/tmp"

    def argv(self) -> list[str]:
        argv = [bwrap_path() or "bwrap", *_system_binds()]
        argv += [
            "--dev",
            "/dev",
            "--proc",
            "/proc",
            "--tmpfs",
            "/run",
            "--tmpfs",
            "/home",
            "--bind",
            str(self.ws.tmp),
            "/tmp",
            "--bind",
            str(self.ws.home),
            HOME,
            "--bind",
            str(self.ws.repo),
            WORKSPACE,
            "--bind",
            str(self.ws.state),
            INSIDE_STATE,
            "--ro-bind",
            str(self.ws.control),
            INSIDE_CONTROL,
            *self._bind_args,  # after the private /tmp and /home, so that they show through those
            *[arg for host, inside in self.venvs.items() for arg in ("--ro-bind", host, inside)],
            "--unshare-pid",
            "--unshare-ipc",
            "--unshare-uts",
            "--unshare-cgroup-try",
            "--unshare-user",
            "--uid",
            str(os.getuid() or 1000),
            "--gid",
            str(os.getgid() or 1000),
            "--hostname",
            "sandbox",
            "--die-with-parent",
            "--new-session",
            "--chdir",
            WORKSPACE,
            "--remount-ro",
            "/",
        ]
        if not self.network:
            argv.append("--unshare-net")
        return [*argv, *self.wrapper_argv()]
