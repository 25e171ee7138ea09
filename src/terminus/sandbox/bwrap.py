"""`bwrap`: bubblewrap. Read-only system, writable workspace, private /tmp and HOME, PID namespace, no network."""

from __future__ import annotations

import os
import shutil

from terminus.sandbox.base import INSIDE_CONTROL, INSIDE_STATE, ProcessSandbox, SandboxError

WORKSPACE = "/workspace"
HOME = "/home/sandbox"


def bwrap_path() -> str | None:
    return shutil.which("bwrap")


# Top-level entries of / that the sandbox gets its own (empty or private) version of.
_PRIVATE = {"proc", "dev", "tmp", "run", "home", "workspace", "lost+found"}


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

    def __init__(self, *args, **kwargs) -> None:
        if bwrap_path() is None:
            raise SandboxError("bubblewrap is not installed (Debian: apt-get install bubblewrap); use --sandbox local")
        super().__init__(*args, **kwargs)

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
