"""Reading, writing and listing the workspace's files through a sandbox's own command channel.

The file operations of `SandboxBase` run as ordinary commands of the sandbox, so they see the files as the
commands do: inside an image, at the image's paths, with nothing of the repository on the host. Bytes travel
through files: in through the control folder, which the host alone writes and the sandbox sees read-only (the
host's `ws.control`, inside at `inside_control`, where every command already reaches its wrapper), and back through
the shell-state folder, which the sandbox writes (`ws.state`, inside at `inside_state`) and the host reads with
`hostfs` (no link followed, regular files only). No quoting, no argument-length limit, and none of the
normalisation and head/tail truncation that a command's output goes through.

Paths are confined twice: lexically here (`..` and absolute paths elsewhere are refused before anything runs),
and inside the sandbox after its own symbolic links are resolved (`readlink -m`, `readlink -f` where only that
exists), so a link in the workspace cannot lead a read or a write outside it.
"""

from __future__ import annotations

import errno
import posixpath
import shlex
import uuid

from terminus.sandbox import hostfs
from terminus.sandbox.errors import OutsideWorkspaceError, SandboxError

FILE_TIMEOUT_S = 120.0  # a file operation is a `cat`; only a wedged sandbox takes this long
# Exit codes of the scripts below, beyond 0 (done) and a failing command's own (message in the output).
OUTSIDE, MISSING, IS_FOLDER, NOT_FOLDER = 3, 4, 5, 6

# Runs with $__t_root, $__t_path (the lexically confined target), $__t_src and $__t_dst set. Utilities are looked up
# with `command -p` (the system's default PATH), so an agent's `export PATH=...` cannot break them, and nothing is
# exported or changes folder: the shell state the wrapper saves after every command stays the agent's own.
_RESOLVE = r"""
__t_root=$(command -p readlink -m -- "$__t_root" 2>/dev/null || command -p readlink -f -- "$__t_root") || exit 4
__t_path=$(command -p readlink -m -- "$__t_path" 2>/dev/null || command -p readlink -f -- "$__t_path") || exit 4
case "$__t_path/" in "${__t_root%/}/"*) ;; *) exit 3 ;; esac
"""

SCRIPTS = {
    "read": _RESOLVE
    + r"""[ -d "$__t_path" ] && exit 5
[ -e "$__t_path" ] || exit 4
command -p cat -- "$__t_path" > "$__t_dst"
""",
    # The folder must exist. The modification time moves on to a later second than the file had: Python's .pyc
    # check (and make's, on coarse filesystems) compares mtimes at 1 s resolution, and an edit in the same second
    # as the previous one, which only an offline agent is fast enough to make, would otherwise go unseen. It waits
    # for the clock's next second rather than stamping one ahead: a modification time in the future makes make warn
    # ("Clock skew detected") when the build runs within that second, so what an agent read depended on load.
    "write": _RESOLVE
    + r"""[ -d "$__t_path" ] && exit 5
[ -d "${__t_path%/*}/" ] || exit 4
__t_before=$(command -p stat -c %Y -- "$__t_path" 2>/dev/null)
if [ -n "$__t_before" ]; then
  while [ "$(command -p date +%s)" -le "$__t_before" ]; do command -p sleep 0.05; done
fi
command -p cat -- "$__t_src" > "$__t_path" || exit 1
exit 0
""",
    # The file's size on a first line, then the file when it is at most $__t_keep bytes, else its first and last
    # $__t_half bytes: a tool that shows a few KB of a 600 MB file copies and reads no more than that.
    "ends": _RESOLVE
    + r"""[ -d "$__t_path" ] && exit 5
[ -e "$__t_path" ] || exit 4
__t_size=$(command -p wc -c < "$__t_path") || exit 1
{
  command -p printf '%s\n' $__t_size
  if [ $__t_size -le "$__t_keep" ]; then command -p cat -- "$__t_path"
  else command -p head -c "$__t_half" -- "$__t_path" && command -p tail -c "$__t_half" -- "$__t_path"; fi
} > "$__t_dst"
""",
    # Every entry below the folder that is not a folder itself (symbolic links are listed, not followed);
    # unreadable subfolders are skipped (find's exit code 1), as a walk on the host would skip them.
    "list": _RESOLVE
    + r"""[ -e "$__t_path" ] || exit 4
[ -d "$__t_path" ] || exit 6
(cd -- "$__t_path" && command -p find . -mindepth 1 ! -type d -print0 2>/dev/null) > "$__t_dst"
[ $? -le 1 ]
""",
}


def confine(root: str, path: str) -> str | None:
    """`path` (relative to `root`, or absolute as the commands see it) as an absolute path inside the sandbox, or
    None when it leaves `root` lexically.

    >>> confine("/workspace", "src/../a.py"), confine("/workspace", "/workspace/a.py"), confine("/workspace", ".")
    ('/workspace/a.py', '/workspace/a.py', '/workspace')
    >>> confine("/workspace", "../etc/passwd"), confine("/workspace", "/etc/passwd"), confine("/", "etc/passwd")
    (None, None, '/etc/passwd')
    """
    root = posixpath.normpath(root)
    full = posixpath.normpath(posixpath.join(root, path))
    return full if (full.rstrip("/") + "/").startswith(root.rstrip("/") + "/") else None


def parse_listing(data: bytes) -> list[str]:
    """find's NUL-separated `./a/b` entries as sorted paths relative to the listed folder."""
    names = data.decode("utf-8", errors="replace").split("\0")
    return sorted(name.removeprefix("./") for name in names if name)


class FileAccess:
    """read_file, write_file and list_files for `SandboxBase`, through the sandbox's own `run` (the module doc)."""

    # `root`: the folder that paths are relative to and confined to, the workspace unless a caller that shows the
    # agent another folder of the sandbox (an image's repository path: mainagent.instance.AtWorkdir) names it.
    def read_file(self, path: str, errors: str = "strict", *, root: str | None = None) -> str:
        return self._file_op("read", path, root).decode("utf-8", errors)

    def write_file(self, path: str, text: str, *, root: str | None = None) -> None:
        self._file_op("write", path, root, text.encode())

    def list_files(self, path: str = ".", *, root: str | None = None) -> list[str]:
        return parse_listing(self._file_op("list", path, root))

    def read_file_ends(self, path: str, keep: int, *, root: str | None = None) -> tuple[bytes, int]:
        """(bytes, the file's size): the whole file when it is at most `keep` bytes, else its first and last
        `keep // 2` bytes, joined. Nothing else of the file is copied or read."""
        half = keep // 2
        data = self._file_op("ends", path, root, names={"keep": str(keep), "half": str(half)}, limit=keep + 32)
        size, _, content = data.partition(b"\n")
        try:
            return content, int(size)
        except ValueError:
            raise OSError(f"cannot read {path} in the sandbox: no size came back") from None

    def _file_op(
        self,
        op: str,
        path: str,
        root: str | None,
        upload: bytes | None = None,
        names: dict[str, str] | None = None,
        limit: int | None = None,
    ) -> bytes:
        root = root or self.inside_workspace
        target = confine(root, path)
        if target is None:
            raise OutsideWorkspaceError(f"{path} is outside the workspace {root}")
        token = uuid.uuid4().hex[:16]  # the transfer files: in through control, back through state
        src, dst = f"src-{token}", f"dst-{token}"
        names = {
            "root": root,
            "path": target,
            "src": f"{self.inside_control}/{src}",
            "dst": f"{self.inside_state}/{dst}",
            **(names or {}),
        }
        try:
            if upload is not None:
                hostfs.write_bytes(self.ws.control, src, upload)
            setup = " ".join(f"__t_{key}={shlex.quote(value)}" for key, value in names.items())
            done = self.run(setup + "\n" + SCRIPTS[op], FILE_TIMEOUT_S)
            if done.exit_code == 0:
                return b"" if op == "write" else hostfs.read_bytes(self.ws.state, dst, limit)
            raise self._file_error(op, path, done)
        finally:
            hostfs.unlink(self.ws.control, src)
            hostfs.unlink(self.ws.state, dst)

    @staticmethod
    def _file_error(op: str, path: str, done) -> Exception:
        if done.timed_out or done.exit_code is None:
            return SandboxError(f"cannot {op} {path}: the sandbox did not answer within {done.duration_s:.0f} s")
        if done.exit_code == OUTSIDE:
            return OutsideWorkspaceError(f"{path} leads outside the workspace (through a symbolic link)")
        if done.exit_code == MISSING:
            what = "folder for this file" if op == "write" else "file or folder"
            return FileNotFoundError(errno.ENOENT, f"no such {what} in the sandbox", path)
        if done.exit_code == IS_FOLDER:
            return IsADirectoryError(errno.EISDIR, "a folder, not a file", path)
        if done.exit_code == NOT_FOLDER:
            return NotADirectoryError(errno.ENOTDIR, "a file, not a folder", path)
        reason = done.output.strip()[-300:] or f"exit code {done.exit_code}"
        return OSError(f"cannot {op} {path} in the sandbox: {reason}")
