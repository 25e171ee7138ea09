"""No future history in a task's environment: the repository an agent starts in holds its base commit alone.

An image (SWE-rebench-V2, SWE-Bench Pro) ships the repository with its whole history, the fix commit often among
it: `git log --all`, a tag, the reflog or a packed object would hand the agent the answer. `hide_history` is the
shell step that, inside the sandbox at start, gives the repository a new `.git` holding `base_commit` alone, as
`grade.base_git` does on the host for local rows: a shallow fetch of that one commit from the old `.git` into a
new one (its hash kept; branches, tags, remotes, reflog, stash and every other object left behind), HEAD detached
at it, the index at its tree and the working tree as it was (a test setup's changes stay, uncommitted). Grading
runs in a fresh sandbox of the same image, so it keeps the history (Pro's test setup checks out the fix commit).
"""

from __future__ import annotations

import shlex

# Command-scope settings: hooks and fsmonitor of the image's repository never run (as grade.GIT_CONFIG); the old
# repository may belong to another uid; a commit may be fetched by hash over any protocol version.
_GIT = (
    "git -c safe.directory='*' -c core.hooksPath=/dev/null -c core.fsmonitor=false "
    "-c uploadpack.allowAnySHA1InWant=true -c protocol.version=2"
)
MARK = "terminus: history hidden"


def hide_history(workdir: str, base_commit: str) -> str:
    """The shell step that leaves the repository at `workdir` (a shell word, quoted as needed) with `base_commit`
    alone. Exits non-zero, saying why, when the commit is not there or git fails: an environment that would show
    the future does not start. A folder that is no git repository has no history to hide (exit 0)."""
    commit = shlex.quote(base_commit)
    # a subshell: `set -e` and the `cd` stay in it, never in the shell state the agent's commands inherit
    return (
        "(\n"
        + "\n".join(
            [
                "set -e",
                f"cd {workdir}",
                f'[ -e .git ] || {{ echo "{MARK}: no .git"; exit 0; }}',
                f"old=$({_GIT} rev-parse --absolute-git-dir)",
                f'full=$({_GIT} rev-parse --verify --quiet {commit}"^{{commit}}") || '
                f'{{ echo "terminus: base commit {base_commit} is not in the repository" >&2; exit 1; }}',
                'new=$(mktemp -d "$PWD/.terminus-git.XXXXXX")',
                f'{_GIT} init --quiet --template= "$new"',
                f'{_GIT} -C "$new" fetch --quiet --no-tags --depth=1 "$old" "$full"',
                'rm -rf .git && mv "$new/.git" .git && rmdir "$new"',
                f'{_GIT} update-ref --no-deref HEAD "$full"',
                f"{_GIT} read-tree HEAD",
                "rm -f .git/FETCH_HEAD && rm -rf .git/logs",
                f'echo "{MARK}: HEAD $full"',
            ]
        )
        + "\n)"
    )
