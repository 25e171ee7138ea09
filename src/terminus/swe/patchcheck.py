"""What a patch may touch before any tool applies it: paths inside the work tree, never its `.git/`.

A model patch is untrusted. `git apply` refuses `.git/` paths, but the grader's `patch -p1` fallback writes them, and
a `.git/hooks/post-checkout` planted that way fires at the test setup's `git checkout`. So every path a patch names,
in every header either tool reads (`diff --git`, `---`/`+++`, `***` of context diffs, `Index:`, rename/copy
from/to), must be relative, free of `..`, and outside any `.git` folder (any case); a symlink the patch creates must
point inside the tree and outside `.git` too. Hunk bodies are skipped by their line counts, exactly as both tools
count them, so a removed line that reads `-- x` is content, while a header hidden after a hunk is still checked.
"""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass

_HUNK = re.compile(r"^@@ -\d+(?:,(\d+))? \+\d+(?:,(\d+))? @@")
# Header lines whose rest names a file, for git apply or GNU patch (unified, context and git diffs).
_PATH_HEADERS = ("diff ", "--- ", "+++ ", "*** ", "Index:", "rename from ", "rename to ", "copy from ", "copy to ")
_ESCAPES = {"a": 7, "b": 8, "t": 9, "n": 10, "v": 11, "f": 12, "r": 13, '"': 34, "\\": 92}


def _unquote(text: str) -> str:
    """A path as git writes it: in double quotes with C escapes (octal bytes for non-ASCII) when it needs them."""
    if not (len(text) >= 2 and text.startswith('"') and text.endswith('"')):
        return text
    out, i, body = bytearray(), 0, text[1:-1]
    while i < len(body):
        c = body[i]
        if c == "\\" and i + 1 < len(body):
            nxt = body[i + 1]
            if nxt in "0123" and re.match(r"[0-7]{3}", body[i + 1 : i + 4]):
                out.append(int(body[i + 1 : i + 4], 8))
                i += 4
                continue
            out.append(_ESCAPES.get(nxt, ord(nxt)) if nxt.isascii() else 92)
            i += 2
            continue
        out += c.encode("utf-8", "surrogateescape")
        i += 1
    return out.decode("utf-8", "surrogateescape")


def _candidates(header: str, rest: str) -> list[str]:
    """Every string of a header line that a tool could take for a file name (more than it does: never fewer)."""
    rest = rest.strip()
    if header in ("--- ", "+++ ", "*** "):
        rest = rest.split("\t", 1)[0].strip()  # a timestamp follows a tab
    tokens = re.findall(r'"(?:[^"\\]|\\.)*"|\S+', rest)
    if header == "diff ":
        tokens = [t for t in tokens if not t.startswith("-")]  # `diff --git`, `diff -u`: options are no paths
        return [_unquote(t) for t in tokens]
    return [_unquote(rest), *(_unquote(t) for t in tokens)]


def unsafe_path(path: str) -> bool:
    """Whether a path from a patch header leaves the work tree or enters a `.git` folder."""
    if path == "/dev/null":
        return False
    if path.startswith("/"):
        return True
    parts = [p.strip() for p in path.split("/")]
    return any(p in ("", "..") or p.casefold() == ".git" for p in parts)


def _shown(path: str) -> str:
    """The path as the tools would apply it: without git's a/ or b/ prefix."""
    return path[2:] if path[:2] in ("a/", "b/") else path


def _link_escapes(link: str, target: str) -> bool:
    """Whether a symlink at `link` (relative to the tree) with `target` points outside the tree or into `.git`."""
    if target.startswith("/"):
        return True
    joined = posixpath.normpath(posixpath.join(posixpath.dirname(link), target))
    return joined == ".." or joined.startswith("../") or unsafe_path(joined)


def unsafe_paths(patch: str) -> list[str]:
    """The paths of `patch` (as the tools would apply them) that leave the work tree or touch `.git/`."""
    bad: list[str] = []
    old = new = 0  # lines left in the current hunk
    link_mode, current, link_lines = False, "", []
    for line in patch.split("\n"):  # both tools split on \n only: a \r or \u2028 stays in its line
        if old > 0 or new > 0:
            kind = line[:1]
            if kind in (" ", "") or line == "":
                old, new = old - 1, new - 1
            elif kind == "-":
                old -= 1
            elif kind == "+":
                new -= 1
                if link_mode:
                    link_lines.append(line[1:])
            elif kind != "\\":
                old = new = 0  # a malformed hunk ends here for both tools; read the line as a header
            if old > 0 or new > 0 or kind in (" ", "-", "+", "\\", ""):
                continue
        hunk = _HUNK.match(line)
        if hunk:
            old = int(hunk.group(1)) if hunk.group(1) is not None else 1
            new = int(hunk.group(2)) if hunk.group(2) is not None else 1
            continue
        if line.startswith("diff "):
            if link_mode and link_lines and _link_escapes(current, link_lines[0]):
                bad.append(f"{current} (a symbolic link to {link_lines[0]})")
            link_mode, link_lines = False, []
        if re.match(r"(new file|new) mode 120000", line):
            link_mode = True
        for header in _PATH_HEADERS:
            if line.startswith(header):
                names = _candidates(header, line[len(header) :])
                bad += [_shown(p) for p in names if unsafe_path(p)]
                if header == "+++ " and names and names[0] != "/dev/null":
                    current = _shown(names[0])
                elif header == "diff " and names:
                    current = _shown(names[-1])
                break
    if link_mode and link_lines and _link_escapes(current, link_lines[0]):
        bad.append(f"{current} (a symbolic link to {link_lines[0]})")
    return list(dict.fromkeys(bad))


def patch_problem(patch: object) -> str | None:
    """Why a prediction's patch cannot be applied at all (not text, not UTF-8, a path outside the work tree or in
    `.git/`), or None. The reason is the prediction's error, never the environment's."""
    if patch is None:
        return None
    if not isinstance(patch, str):
        kind = {dict: "object", list: "array", bool: "boolean", int: "number", float: "number"}
        return f"the patch is not text (a JSON {kind.get(type(patch), type(patch).__name__)})"
    try:
        patch.encode("utf-8")
    except UnicodeEncodeError as err:
        return f"the patch is not valid UTF-8 text (a lone surrogate at character {err.start})"
    bad = unsafe_paths(patch)
    if bad:
        more = f" and {len(bad) - 1} more" if len(bad) > 1 else ""
        shown = bad[0].encode("utf-8", "backslashreplace").decode()  # a path may carry undecodable bytes
        return f"the patch touches {shown}{more}: outside the work tree or in its .git folder; not applied"
    return None


@dataclass(frozen=True)
class FileChange:
    """One file section of a git diff: its path before (None when created) and after (None when deleted)."""

    old: str | None
    new: str | None
    kind: str
    """add | delete | modify (content, mode or binary) | rename | copy"""


def _header_path(rest: str, prefix: str) -> str | None:
    """The path of a `---`/`+++` line (git ends a name holding a space with a tab), without its a/ or b/."""
    rest = _unquote(rest.split("\t", 1)[0].rstrip("\n") if not rest.startswith('"') else rest.strip())
    if rest == "/dev/null":
        return None
    return rest[len(prefix) :] if rest.startswith(prefix) else rest


def _diff_git_paths(rest: str) -> tuple[str, str] | None:
    """The two paths of `diff --git a/X b/Y`: quoted, or unquoted (split where a/X and b/X name the same file)."""
    tokens = re.findall(r'"(?:[^"\\]|\\.)*"', rest)
    if len(tokens) == 2:
        a, b = (_unquote(t) for t in tokens)
        return a.removeprefix("a/"), b.removeprefix("b/")
    if rest.startswith("a/"):
        body = rest[2:]
        half = (len(body) - 3) // 2  # "X b/X": a name with spaces splits where both halves agree
        if len(body) % 2 == 1 and body[half : half + 3] == " b/" and body[:half] == body[half + 3 :]:
            return body[:half], body[half + 3 :]
        m = re.match(r"(\S+) b/(\S+)$", body)
        if m:
            return m.group(1), m.group(2)
    return None


def file_changes(patch: str) -> list[FileChange]:
    """What each file section of a (git) diff does to its file: renames, copies, deletions, creations, mode-only
    and binary changes included. The rename/copy and ---/+++ headers win over `diff --git`'s pair."""
    changes: list[FileChange] = []
    for section in re.split(r"(?m)^(?=diff --git )", patch):
        if not section.startswith("diff --git "):
            continue
        lines = section.split("\n")
        pair = _diff_git_paths(lines[0][len("diff --git ") :])
        old, new = pair if pair else (None, None)
        kind = "modify"
        for line in lines[1:]:
            if line.startswith("@@") or line.startswith("GIT binary patch"):
                break  # headers end where the content starts
            if line.startswith("new file mode"):
                kind = "add"
            elif line.startswith("deleted file mode"):
                kind = "delete"
            elif line.startswith(("rename from ", "copy from ")):
                old = _unquote(line.split(" from ", 1)[1])
                kind = line.split(" ", 1)[0]
            elif line.startswith(("rename to ", "copy to ")):
                new = _unquote(line.split(" to ", 1)[1])
            elif line.startswith("--- "):
                path = _header_path(line[4:], "a/")
                kind, old = ("add", old) if path is None else (kind, path)
            elif line.startswith("+++ "):
                path = _header_path(line[4:], "b/")
                kind, new = ("delete", new) if path is None else (kind, path)
        if kind == "add":
            old = None
        elif kind == "delete":
            new = None
        if old or new:
            changes.append(FileChange(old, new, kind))
    return changes


def files_after(patch: str) -> list[str]:
    """The paths the patch leaves in the tree (a rename's target, not its source; no deleted file)."""
    return list(dict.fromkeys(c.new for c in file_changes(patch) if c.new))
