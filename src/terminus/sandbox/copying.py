"""How a repository becomes a workspace: the files git sees, or everything; special files never.

`git` mode (the default) copies what `git ls-files --cached --others --exclude-standard` lists when the source
is a git work tree (tracked files, plus untracked files that are not ignored), so a checkout's `.venv`,
`results/`, build folders and caches stay out, and the repository's own `.git` folder so that `git status` and
`git diff` work inside. Outside a work tree, in a folder the enclosing work tree ignores (task snapshots under
`results/`), and in `all` mode, every file is copied. Named pipes, sockets
and devices are skipped in both modes (copying a pipe blocks, a device is not the repository's): the caller
gets their paths to report.

Nothing listed is trusted (docs/ARCHITECTURE.md, "The sandbox boundary"): the listing comes from the repository's
own index, which the repository (or, for a main agent's workspace, the sandbox) writes, and the tree can hold links.
Every path is copied through `fdtree`: it must be a plain relative path (no `..`, `.` or empty component), and
each of its components is opened with `O_NOFOLLOW` on the source side and on the copy's side, so a path that
passes through a link (`lnk/../../etc/x`, `ignored-link/secret`) is refused, named in one warning and never read or
written. A link that is itself listed is copied as a link, never followed. A repository owned by another user is
listed by git all the same (`safe.directory` for these read-only commands): only what git lists is copied, never its
ignored files, as for one's own.

A whole-folder copy can be capped (`max_bytes`; the commands that copy a user's folder default to
`DEFAULT_MAX_COPY_MB`): started in a home folder, it would otherwise copy gigabytes for every sandbox. The size is
measured first (regular files' sizes, links not followed), stopping as soon as it passes the cap, so an oversized
folder costs a partial walk and no copy.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import stat
import subprocess
import tempfile
from pathlib import Path

from terminus.sandbox import fdtree, hostfs
from terminus.sandbox.errors import SandboxError
from terminus.sandbox.tmproot import run_root

log = logging.getLogger(__name__)

COPY_MODES = ("git", "all")
# The source can be a workspace a sandboxed command wrote (the main agent's, copied for its subagent): its
# `.git/config` is then the sandbox's, and a `core.fsmonitor` or hook there would run on the host. The read-only
# commands below run nothing else a repository's config can name (no filters, no diff drivers).
# `safe.directory`: git refuses a repository another user owns ("dubious ownership"), and a refusal used to mean
# "not a work tree", so such a repository was copied whole, ignored secrets included; with fsmonitor and hooks off,
# these listing commands are as safe in it as in one's own.
GIT_SAFE = (
    "-c",
    "core.fsmonitor=false",
    "-c",
    "core.hooksPath=/dev/null",
    "-c",
    "core.untrackedCache=false",
    "-c",
    "safe.directory=*",
)
MB = 1_000_000
DEFAULT_MAX_COPY_MB = 200
COPY_CAP_FLAG = "--max-copy-mb"


class CopyTooLargeError(SandboxError):
    """A folder that would be copied whole is over the copy cap; nothing was copied."""


def own_git(source: Path) -> str | None:
    """What `source/.git` is, not following a link: `dir`, `file` (a worktree's or submodule's pointer), `other` (a
    link, a FIFO, ...), or None when there is none."""
    try:
        mode = os.lstat(source / ".git").st_mode
    except OSError:
        return None
    return "dir" if stat.S_ISDIR(mode) else "file" if stat.S_ISREG(mode) else "other"


def in_git_work_tree(source: Path) -> bool:
    """Whether git copies `source` by its listing: a repository of its own (`.git` there), or a folder inside an
    enclosing work tree that the tree does not ignore."""
    if shutil.which("git") is None:
        return False
    if own_git(source) is not None:
        return True
    try:
        inside = subprocess.run(
            ["git", *GIT_SAFE, "-C", str(source), "rev-parse", "--is-inside-work-tree"],
            capture_output=True,
            text=True,
            timeout=60,
        )
        if inside.returncode != 0 or inside.stdout.strip() != "true":
            return False
        # A folder the enclosing repository ignores (a task snapshot under results/) is data, not part of that
        # repository: git would list nothing in it, so it is copied whole. The enclosing repository is the host's
        # (the source's own `.git`, which the repository or a sandbox writes, is never used here: `own_git`).
        ignored = subprocess.run(
            ["git", *GIT_SAFE, "-C", str(source), "check-ignore", "-q", "."], capture_output=True, timeout=60
        )
    except (OSError, subprocess.TimeoutExpired) as err:
        log.warning("git could not tell whether %s is a work tree (%s); copying every file", source, err)
        return False
    return ignored.returncode != 0


def size_up_to(source: Path, limit: int) -> int:
    """Bytes in `source`'s regular files (links not followed, unreadable folders skipped), counted until the
    total passes `limit`: a result over `limit` means "more than that", not the folder's whole size."""
    total = 0
    with fdtree.DirChain(source) as chain:
        for _, info in fdtree.walk(chain.root_fd):
            if stat.S_ISREG(info.st_mode):
                total += info.st_size
                if total > limit:
                    break
    return total


def check_copy_size(source: Path, max_bytes: int | None, mode: str = "git") -> None:
    """Raise CopyTooLargeError when `source` is copied whole (see `copy_repository`) and is over `max_bytes`
    (None: no cap)."""
    if max_bytes is None or (mode == "git" and in_git_work_tree(source)):
        return
    if size_up_to(source, max_bytes) > max_bytes:
        raise CopyTooLargeError(too_large(source, max_bytes, mode))


def too_large(source: Path, max_bytes: int, mode: str) -> str:
    why = "--copy all" if mode == "all" else "not a git work tree"
    return (
        f"{source} holds more than {max_bytes / MB:g} MB and would be copied whole into the sandbox ({why}); "
        f"point --repo at the project, or raise the cap with {COPY_CAP_FLAG} N (0: no cap)"
    )


def git_listing(source: Path) -> list[str] | None:
    """Paths (relative to `source`) git sees under it, or None when it is not inside a git work tree."""
    source = Path(source).absolute()  # git runs in it (cwd) and is told of it (-C, GIT_WORK_TREE)
    kind = own_git(source)
    if kind is not None:
        paths = _private_listing(source, kind)
        return [".git", *paths] if kind == "dir" else paths  # a worktree's `.git` file points outside: left out
    if not in_git_work_tree(source):
        return None
    try:  # the enclosing repository is the host's own (`in_git_work_tree`)
        return _list(["git", *GIT_SAFE, "-C", str(source), "ls-files", *LS_FILES, "--exclude-standard"], source)
    except subprocess.TimeoutExpired as err:
        raise SandboxError(f"git did not list the files of {source} within {err.timeout:.0f} s") from err


LS_FILES = ("-z", "--cached", "--others")
LIST_TIMEOUT_S = 120
# How long the repository's own listing may take before its untracked files are left out: a FIFO named `.gitignore`
# blocks git's read of it for good, and a listing of tracked files alone reads no file of the tree.
UNTRACKED_TIMEOUT_S = 20


def _list(argv: list[str], source: Path, env: dict | None = None, timeout: float = LIST_TIMEOUT_S) -> list[str]:
    """Run a `git ls-files` listing; SandboxError (nothing copied) when it fails, subprocess.TimeoutExpired when it
    hangs (never a fallback to copying every file, which would copy what is ignored)."""
    try:
        listed = subprocess.run(argv, capture_output=True, timeout=timeout, env=env, cwd=source)
    except OSError as err:
        raise SandboxError(f"git could not list the files of {source} ({err}); nothing was copied") from err
    if listed.returncode != 0:
        why = listed.stderr.decode(errors="replace").strip().splitlines()[-1:] or [f"exit {listed.returncode}"]
        raise SandboxError(f"git could not list the files of {source}: {why[0]}; nothing was copied")
    return sorted({p for p in listed.stdout.decode(errors="surrogateescape").split("\0") if p})


def _private_listing(source: Path, kind: str) -> list[str]:
    """The repository's own listing (tracked files, and untracked ones its `.gitignore` files do not ignore), made
    with a git folder the host made: nothing of `source/.git` is read by git itself. Its config (fsmonitor,
    `core.worktree`, `core.excludesFile`, `include.path`), links and FIFOs in it would otherwise make host git read
    or block on host paths the repository names. The index and `info/exclude` are copied in by `hostfs` (regular
    files reached without a link; anything else counts as absent); with a `.git` file (a worktree) or an index git
    cannot read alone (a split index), the listing is the files no `.gitignore` ignores."""
    with tempfile.TemporaryDirectory(prefix="git-list-", dir=run_root()) as private:
        gitdir = Path(private) / "git"
        subprocess.run(["git", "init", "-q", "--template=", "--bare", str(gitdir)], check=True, capture_output=True)
        (gitdir / "info").mkdir(exist_ok=True)
        excludes = ["--exclude-per-directory=.gitignore"]
        for rel, name in ((".git/index", "index"), (".git/info/exclude", "info/exclude")):
            if kind != "dir":
                break
            try:
                (gitdir / name).write_bytes(hostfs.read_bytes(source, rel))
            except (OSError, hostfs.UnsafePathError) as err:
                if not isinstance(err, FileNotFoundError):
                    log.warning("%s: %s is not a plain file; left out of git's listing (%s)", source, rel, err)
        if (gitdir / "info/exclude").is_file():
            excludes.append(f"--exclude-from={gitdir / 'info/exclude'}")
        if global_excludes := _global_excludes():
            excludes.append(f"--exclude-from={global_excludes}")
        env = {**os.environ, "GIT_DIR": str(gitdir), "GIT_WORK_TREE": str(source)}
        argv = ["git", *GIT_SAFE, "-c", "core.bare=false", "ls-files", *LS_FILES, *excludes]
        try:
            try:
                return _list(argv, source, env, timeout=UNTRACKED_TIMEOUT_S)
            except SandboxError:
                if not (gitdir / "index").exists():
                    raise
                log.warning("%s: git cannot read its index alone; listing the files no .gitignore ignores", source)
                (gitdir / "index").unlink()
                return _list(argv, source, env, timeout=UNTRACKED_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            log.warning(
                "%s: git did not list its untracked files within %d s (a .gitignore that is a FIFO?); copying the "
                "tracked files only",
                source,
                UNTRACKED_TIMEOUT_S,
            )
            return _list([*argv[: argv.index("ls-files") + 1], "-z", "--cached"], source, env)


def _global_excludes() -> str | None:
    """The harness user's own excludes file (`core.excludesFile` of their global config, else git's default)."""
    try:
        named = subprocess.run(
            ["git", "config", "--global", "--type=path", "--get", "core.excludesFile"],
            capture_output=True,
            text=True,
            timeout=30,
            cwd="/",
        ).stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        named = ""
    default = Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config") / "git" / "ignore"
    path = Path(named) if named else default
    return str(path) if path.is_file() else None


def copy_repository(
    source: Path, dest: Path, mode: str = "git", max_bytes: int | None = None, owner: tuple[int, int] | None = None
) -> list[str]:
    """Copy `source` into the new folder `dest`; returns what was not copied (relative paths): special files, and
    paths refused because they are not plain or pass through a link (each kind named in one warning).

    `max_bytes` caps a whole-folder copy (not a git work tree, or mode `all`): over it, CopyTooLargeError and
    nothing is copied (`dest` is not made). A git listing is not capped. `owner` (uid, gid): who owns what is
    copied (the sandbox's user, when the harness is root); None: the harness."""
    if mode not in COPY_MODES:
        raise ValueError(f"copy mode {mode!r}: choose one of {', '.join(COPY_MODES)}")
    listing = git_listing(source) if mode == "git" else None
    if listing is None and max_bytes is not None and size_up_to(source, max_bytes) > max_bytes:
        raise CopyTooLargeError(too_large(source, max_bytes, mode))  # a partial walk, before anything is made
    dest.mkdir(parents=True)
    try:
        with fdtree.DirChain(source) as src, fdtree.DirChain(dest, create=True) as dst:
            entries = _entries(src, listing)
            regular = [i.st_size for _, i in entries if not isinstance(i, str) and stat.S_ISREG(i.st_mode)]
            if listing is None and max_bytes is not None and sum(regular) > max_bytes:  # it grew since measured
                raise CopyTooLargeError(too_large(source, max_bytes, mode))
            return _copy_entries(src, dst, entries, owner, source)
    except BaseException:
        fdtree.remove_tree(dest)
        raise


def _entries(src: fdtree.DirChain, listing: list[str] | None) -> list[tuple[str, os.stat_result | str]]:
    """(path, lstat) of what to copy, folders below a listed folder included; (path, reason) for a refused one."""
    if listing is None:
        return list(fdtree.walk(src.root_fd))
    out: list[tuple[str, os.stat_result | str]] = []
    for rel in listing:
        try:
            parts = fdtree.plain_parts(rel)
            info = os.stat(parts[-1], dir_fd=src.folder(parts[:-1]), follow_symlinks=False)
        except fdtree.RefusedPath as err:
            out.append((rel, str(err)))
            continue
        except FileNotFoundError:  # listed by git but deleted in the tree
            continue
        except OSError as err:
            if err.errno not in fdtree.ENTRY_ERRNOS:
                raise
            out.append((rel, str(err)))
            continue
        out.append((rel, info))
        if stat.S_ISDIR(info.st_mode):  # `.git`, a submodule's folder: everything below it, links not followed
            out += fdtree.walk(src.root_fd, rel)
    return out


def _copy_entries(src, dst, entries, owner, source: Path) -> list[str]:
    skipped, refused = [], []
    folders: dict[tuple[str, ...], os.stat_result | None] = {}  # listed (their lstat) or only on the way (None)
    for rel, info in entries:
        if isinstance(info, str):
            refused.append(rel)
            continue
        try:
            parts = fdtree.plain_parts(rel)
            sfd, dfd = src.folder(parts[:-1]), dst.folder(parts[:-1])
            for k in range(1, len(parts)):
                folders.setdefault(tuple(parts[:k]), None)
            name = parts[-1]
            if stat.S_ISDIR(info.st_mode):
                with contextlib.suppress(FileExistsError):
                    os.mkdir(name, 0o700, dir_fd=dfd)
                folders[tuple(parts)] = info
            elif stat.S_ISLNK(info.st_mode):
                os.symlink(os.readlink(name, dir_fd=sfd), name, dir_fd=dfd)
                if owner:
                    os.chown(name, *owner, dir_fd=dfd, follow_symlinks=False)
            elif stat.S_ISREG(info.st_mode):
                _copy_file(sfd, dfd, name, info, owner)
            else:
                skipped.append(rel)
        except (fdtree.RefusedPath, FileExistsError) as err:  # through a link made by an earlier entry, or twice
            log.debug("refused %s: %s", rel, err)
            refused.append(rel)
        except FileNotFoundError:  # deleted since it was listed
            continue
        except OSError as err:
            if err.errno not in fdtree.ENTRY_ERRNOS:
                raise
            refused.append(rel)
    for parts, info in sorted(folders.items(), reverse=True):  # after the files, so that their mtimes stay
        fd = dst.folder(list(parts))
        info = info or os.fstat(src.folder(list(parts)))
        if owner:
            os.fchown(fd, *owner)
        os.fchmod(fd, stat.S_IMODE(info.st_mode) & 0o777)
        os.utime(fd, ns=(info.st_atime_ns, info.st_mtime_ns))
    if owner:
        os.fchown(dst.root_fd, *owner)
    kinds = (("special files (pipes, sockets, devices)", skipped), ("paths through a link or not plain", refused))
    for kind, names in kinds:
        if names:
            log.warning(
                "%s: skipped %d %s: %s",
                source,
                len(names),
                kind,
                ", ".join(fdtree.printable(n) for n in names[:5]) + (" ..." if len(names) > 5 else ""),
            )
    return skipped + refused


def _copy_file(sfd: int, dfd: int, name: str, info: os.stat_result, owner: tuple[int, int] | None) -> None:
    """Copy one regular file by descriptor: opened without following a link (and refused unless still a regular
    file), created exclusively; its permission bits (never setuid or setgid) and times kept."""
    fin = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=sfd)
    try:
        if not stat.S_ISREG(os.fstat(fin).st_mode):
            raise fdtree.RefusedPath(f"{name}: not a regular file any more")
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
        fout = os.open(name, flags, 0o600, dir_fd=dfd)
        try:
            while os.sendfile(fout, fin, None, 1 << 30) if _SENDFILE else _copy_chunk(fin, fout):
                pass
            if owner:
                os.fchown(fout, *owner)
            os.fchmod(fout, stat.S_IMODE(info.st_mode) & 0o777)
            os.utime(fout, ns=(info.st_atime_ns, info.st_mtime_ns))
        finally:
            os.close(fout)
    finally:
        os.close(fin)


_SENDFILE = hasattr(os, "sendfile")


def _copy_chunk(fin: int, fout: int) -> int:
    chunk = os.read(fin, 1 << 20)
    view = memoryview(chunk)
    while view:
        view = view[os.write(fout, view) :]
    return len(chunk)
