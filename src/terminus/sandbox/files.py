"""Reading, writing and listing the workspace's files through a sandbox's own command channel.

The file operations of `SandboxBase` run as ordinary commands of the sandbox, so they see the files as the
commands do: inside an image, at the image's paths, with nothing of the repository on the host. Bytes travel
through the sandbox's state folder, the folder through which every command already reaches its wrapper (the
host's `ws.state`, bound inside at the backend's `inside_state`): no quoting, no argument-length limit, and none
of the normalisation and head/tail truncation that a command's output goes through.

Paths are confined twice: lexically here (`..` and absolute paths elsewhere are refused before anything runs),
and inside the sandbox after its own symbolic links are resolved (`readlink -m`, `readlink -f` where only that
exists), so a link in the workspace cannot lead a read or a write outside it.
"""

from __future__ import annotations

import posixpath

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
    # as the previous one, which only an offline agent is fast enough to make, would otherwise go unseen.
    "write": _RESOLVE
    + r"""[ -d "$__t_path" ] && exit 5
[ -d "${__t_path%/*}/" ] || exit 4
__t_before=$(command -p stat -c %Y -- "$__t_path" 2>/dev/null)
command -p cat -- "$__t_src" > "$__t_path" || exit 1
if [ -n "$__t_before" ] && [ "$(command -p date +%s)" -le "$__t_before" ]; then
  command -p touch -d "@$((__t_before + 1))" -- "$__t_path" 2>/dev/null
fi
exit 0
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
