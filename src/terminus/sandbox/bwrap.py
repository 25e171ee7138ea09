"""`bwrap`: bubblewrap. Read-only system, writable workspace, private /tmp, /home, /root and /run, PID namespace, no
network, and, when the harness is root, a command that runs as a user who owns nothing on the host.

Under a root harness, `--unshare-user --uid` would map the sandbox's user to root: every root-owned file in view
(`/etc/shadow`, mode-600 files under `/var`, `/etc` or the work folders) would be the command's own. So as root, bwrap
keeps root only for its own set-up (mounts), and the command is started through `setpriv` as `SANDBOX_UID`, a uid
with no entry on the host, with no capabilities, an empty bounding set and `no_new_privs`; the workspace's folders
are made over to that uid. As any other user, bwrap maps the command to that same user (an ordinary user already).
"""

from __future__ import annotations

import os
import re
import shutil

from terminus.sandbox.binds import parse_binds
from terminus.sandbox.errors import SandboxError
from terminus.sandbox.process import TOOLCHAIN_HOMES, ProcessSandbox
from terminus.sandbox.workspace import INSIDE_CONTROL, INSIDE_STATE

WORKSPACE = "/workspace"
HOME = "/home/sandbox"
# Where the Python virtual environments on the harness's PATH appear inside: a fixed path, so that what a command
# prints (`command -v python3`, a traceback into site-packages) is the same in every clone of the repository and
# training data made in /work/main and in a CI checkout elsewhere are the same text. The first is TOOLCHAINS/venv.
TOOLCHAINS = "/toolchains"
# The command's uid and gid under a root harness: distroless's "nonroot", which no host package owns files as.
SANDBOX_UID = 65532
# Each private tmpfs (/run, /home, /root, /dev/shm) holds at most this: a command cannot fill the host's memory there.
TMPFS_BYTES = 256 * 1024 * 1024
# Home folders: hidden (an empty tmpfs), except the toolchain folders the command needs (`toolchain_binds`).
HIDDEN_HOMES = ("/root", "/home")


def bwrap_path() -> str | None:
    return shutil.which("bwrap")


# A path a shell or an exec names: "bash: /home/u/venv/bin/python: No such file or directory".
_PRIVATE_PATH = re.compile(r"(?<![\w.~/-])(/(?:tmp|home)/[^\s:'\"`;,)]+)")

# Top-level entries of / that the sandbox gets its own (empty or private) version of.
_PRIVATE = {"proc", "dev", "tmp", "run", "home", "root", "workspace", "toolchains", "lost+found"}


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
    """`--ro-bind` arguments for host paths (`binds.parse_binds`: read-only, absolute, existing, not a socket); the
    first bad one raises SandboxError naming it (bwrap would refuse to start, naming no path of ours)."""
    return [arg for bind in parse_binds(binds) for arg in ("--ro-bind", bind.host, bind.inside)]


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


# Folders the sandbox gets fresh (a tmpfs, or a workspace folder): bwrap makes missing folders on the way to a bind
# below them mode 0700 and root-owned, which the unprivileged command could not enter.
_FRESH = ("/toolchains", "/tmp", "/home", "/root", "/run")


def with_parents(args: list[str]) -> list[str]:
    """`args` (bwrap bind options) with `--perms 0755 --dir` before each bind for every folder on the way to its
    destination below a fresh folder (`_FRESH`), each once: `/toolchains` and `/tmp/a` for `/tmp/a/venv`."""
    out: list[str] = []
    made: set[str] = set()
    i = 0
    while i < len(args):
        if args[i] in ("--bind", "--ro-bind"):
            dest = os.path.normpath(args[i + 2])
            fresh = next((f for f in _FRESH if dest.startswith(f + "/")), None)
            if fresh:
                parts = dest[len(fresh) + 1 :].split("/")[:-1]
                folders = ([fresh] if fresh == "/toolchains" else []) + [
                    "/".join([fresh, *parts[: k + 1]]) for k in range(len(parts))
                ]
                for folder in folders:
                    if folder not in made:
                        made.add(folder)
                        out += ["--perms", "0755", "--dir", folder]
            out += args[i : i + 3]
            i += 3
        else:
            out.append(args[i])
            i += 1
    return out


def _hidden_top(path: str) -> str | None:
    """The folder to bind for a toolchain path under a hidden home: `/root/.pyenv/shims` -> `/root/.pyenv`,
    `/home/u/.cargo/bin` -> `/home/u/.cargo`; None outside the hidden homes or for a home itself."""
    norm = os.path.normpath(path)
    for home in HIDDEN_HOMES:
        if norm.startswith(home + "/"):
            depth = 1 if home == "/root" else 2  # /home/<user>/<folder>
            parts = norm[len(home) + 1 :].split("/")
            return "/".join([home, *parts[:depth]]) if len(parts) >= depth else None
    return None


def toolchain_binds(path_var: str, venvs: dict[str, str]) -> list[str]:
    """The folders under a hidden home (`HIDDEN_HOMES`) that the command's toolchains live in, to bind read-only:
    each PATH entry's, each toolchain manager's home (`TOOLCHAIN_HOMES`: rustup, pyenv), and each bound venv's base
    interpreter (pyvenv.cfg's `home`: a pyenv Python). Nothing else of those homes is visible."""
    candidates = [e for e in path_var.split(":") if e.startswith("/")]
    candidates += [
        os.environ.get(var) or os.path.join(os.path.expanduser("~"), d) for var, d in TOOLCHAIN_HOMES.items()
    ]
    for prefix in venvs:
        try:
            with open(os.path.join(prefix, "pyvenv.cfg")) as cfg:
                candidates += [line.split("=", 1)[1].strip() for line in cfg if line.split("=")[0].strip() == "home"]
        except OSError:
            continue
    tops = {top for c in candidates if (top := _hidden_top(c)) and os.path.isdir(top) and not os.path.islink(top)}
    return sorted(tops)


class BwrapSandbox(ProcessSandbox):
    """The command sees the host's system read-only, and only its own workspace, home and /tmp writable.

    As root (the module doc), the command is `SANDBOX_UID` through `setpriv`, with no capabilities; otherwise
    `--unshare-user --uid` makes it the harness's own ordinary user inside a user namespace. Either way it cannot
    remount the read-only system or reach the host's network namespace.
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
        self.toolchains = toolchain_binds(os.environ.get("PATH", ""), self.venvs)
        self.setpriv = shutil.which("setpriv") if os.geteuid() == 0 else None
        if os.geteuid() == 0 and self.setpriv is None:
            raise SandboxError(
                "bwrap under root needs setpriv (util-linux) to run commands as an unprivileged user; "
                "install util-linux, or run terminus as an ordinary user"
            )
        super().__init__(*args, **kwargs)

    @classmethod
    def from_spec(cls, spec, source, limits, network, **sizes):
        return cls(source, limits, network, binds=list(spec.binds), **sizes)

    def hidden_host_paths(self, log: str) -> list[str]:
        """Host paths under /tmp or /home (private here) that the log names or PATH holds, which exist on the host
        and no bind shows."""
        bound = {b.partition(":")[0] for b in self.binds} | set(self.toolchains)  # toolchains: bound where they are
        named = [p for p in _PRIVATE_PATH.findall(log) if os.path.exists(p)]
        on_path = [p for p in self.env().get("PATH", "").split(":") if _PRIVATE_PATH.fullmatch(p) and os.path.isdir(p)]
        return [p for p in dict.fromkeys(named + on_path) if not any(p == b or p.startswith(b + "/") for b in bound)]

    def sandbox_owner(self) -> tuple[int, int] | None:
        return (SANDBOX_UID, SANDBOX_UID) if self.setpriv else None

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
        size = ["--size", str(TMPFS_BYTES)]
        argv = [bwrap_path() or "bwrap", *_system_binds()]
        argv += ["--dev", "/dev", "--perms", "1777", *size, "--tmpfs", "/dev/shm", "--proc", "/proc"]
        for folder in ("/run", *HIDDEN_HOMES):
            argv += [*size, "--tmpfs", folder]
        argv += with_parents([arg for top in self.toolchains for arg in ("--ro-bind", top, top)])
        argv += [
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
            # after the private /tmp and /home, so that they show through those
            *with_parents([*self._bind_args, *[a for h, i in self.venvs.items() for a in ("--ro-bind", h, i)]]),
            "--unshare-pid",
            "--unshare-ipc",
            "--unshare-uts",
            "--unshare-cgroup-try",
            "--hostname",
            "sandbox",
            "--die-with-parent",
            "--new-session",
            "--chdir",
            WORKSPACE,
            "--remount-ro",
            "/",
        ]
        if not self.setpriv:
            argv += ["--unshare-user", "--uid", str(os.getuid()), "--gid", str(os.getgid())]
        if not self.network:
            argv.append("--unshare-net")
        return [*argv, "--", *self.drop_privileges(), *self.wrapper_argv()]

    def drop_privileges(self) -> list[str]:
        """Under a root harness, `setpriv` makes the command `SANDBOX_UID`: no supplementary groups, no capabilities
        (inheritable, ambient or bounding), and no way to gain any back (`no_new_privs`)."""
        if not self.setpriv:
            return []
        ids = [f"--reuid={SANDBOX_UID}", f"--regid={SANDBOX_UID}", "--clear-groups"]
        return [self.setpriv, *ids, "--inh-caps=-all", "--ambient-caps=-all", "--bounding-set=-all", "--no-new-privs"]
