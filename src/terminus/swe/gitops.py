"""Git plumbing of the grader: on the host, a clone of a local repository at its base commit (`checkout`, with its
later history left out for an agent: `base_git`) and the edits of an agent's tree as a patch (`patch_from_tree`,
which never runs git over the tree's own .git/); inside a sandbox, git without hooks or fsmonitor (`GIT`,
`GIT_SAFE`) and a patch applied as SWE-bench's harness applies it (`apply_command`)."""

from __future__ import annotations

import base64
import os
import shlex
import shutil
import subprocess
import tempfile
from pathlib import Path

from terminus.sandbox import fdtree
from terminus.sandbox.tmproot import run_root
from terminus.swe.patchcheck import patch_problem
from terminus.swe.record import GradeError

# Inside a user namespace the copied repository belongs to another uid; git refuses such "dubious ownership"
# unless told the directory is safe. A workspace that a patch or a model touched may hold hooks or an fsmonitor
# command in its .git/: every git in the sandbox (the dataset's own setup commands too) runs with neither, since
# these command-scope settings win over the repository's config.
GIT_CONFIG = {"safe.directory": "*", "core.hooksPath": "/dev/null", "core.fsmonitor": "false"}
GIT_SAFE = {"GIT_CONFIG_COUNT": str(len(GIT_CONFIG))} | {
    f"GIT_CONFIG_{kind}_{i}": text
    for i, pair in enumerate(GIT_CONFIG.items())
    for kind, text in zip(("KEY", "VALUE"), pair, strict=True)
}
# The same, spelled out, for the grader's own git commands (they also run under limits that lack GIT_SAFE, such as
# the eval's agent sandbox); command-scope config is "protected", so git honours safe.directory there.
GIT = "git " + " ".join(f"-c {shlex.quote(f'{key}={value}')}" for key, value in GIT_CONFIG.items())


def stage_text(name: str, text: str) -> str:
    """A shell step that writes `text` to $TMPDIR/name byte for byte (base64: no quoting or heredoc pitfalls)."""
    data = base64.b64encode(text.encode()).decode()
    return f'printf %s {data} | base64 -d > "${{TMPDIR:-/tmp}}/{name}"'


def apply_command(patch: str, workdir: str, name: str = "terminus-model.diff") -> str:
    """git apply, else GNU patch (as SWE-bench's harness does); a patch naming a path outside the work tree or in
    its .git/ never reaches either (GradeError)."""
    problem = patch_problem(patch)
    if problem:
        raise GradeError(problem)
    target = f'"${{TMPDIR:-/tmp}}/{name}"'
    return (
        f"cd {workdir} && {stage_text(name, patch)} && "
        f"{{ {GIT} apply -v --whitespace=nowarn {target} || patch --batch --fuzz=5 -p1 -i {target}; }}"
    )


def _git(*args: str, cwd: Path | None = None) -> str:
    done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        raise GradeError(f"`git {' '.join(args)}` failed: {done.stderr.strip()[-400:]}")
    return done.stdout


def checkout(repo_path: str, commit: str, dest: Path, *, hide_future: bool = False) -> Path:
    """A clone of a local repository at `commit` (the sandbox copies it; the user's repository is untouched).

    `hide_future`: a repository of that one commit (`base_git`), as SWE-bench's images hold, so that an agent
    cannot read the fix from history. Grading keeps everything: SWE-Bench Pro's test setup checks the test files
    out of the fix commit."""
    if not Path(repo_path, ".git").exists():
        raise GradeError(f"repo_path {repo_path} is not a git repository")
    if hide_future:
        dest.mkdir(parents=True)
        base_git(repo_path, commit, dest)
        _git("reset", "--quiet", "--hard", cwd=dest)
        return dest
    _git("clone", "--quiet", "--no-hardlinks", repo_path, str(dest))
    _git("-c", "advice.detachedHead=false", "checkout", "--quiet", commit, cwd=dest)
    return dest


def base_git(repo_path: str, commit: str, tree: Path) -> None:
    """Give `tree` a new .git that holds `commit` alone: a shallow fetch of that one commit (its hash kept, its
    history, branches, tags, remote and every later commit left out), HEAD detached at it and the index at its
    tree; the files of `tree` are left as they are. A snapshot so made is the size of one tree, and `git log
    --all` in it shows one commit."""
    source = Path(repo_path).resolve()
    try:
        commit = _git("rev-parse", "--verify", "--quiet", f"{commit}^{{commit}}", cwd=source).strip()  # full hash
    except GradeError:
        raise GradeError(f"commit {commit} is not in the repository {repo_path}") from None
    shutil.rmtree(tree / ".git", ignore_errors=True)
    _git("init", "--quiet", "--template=", str(tree))
    _git("fetch", "--quiet", "--no-tags", "--depth=1", str(source), commit, cwd=tree)
    _git("update-ref", "--no-deref", "HEAD", commit, cwd=tree)
    _git("read-tree", "HEAD", cwd=tree)
    (tree / ".git" / "FETCH_HEAD").unlink(missing_ok=True)


def _host_git(git_dir: Path, *args: str, cwd: Path, index: Path | None = None) -> str:
    """Host git over a git folder the host made, with no system or user config: no hook, fsmonitor, filter,
    textconv or external diff of anyone else's can run."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env |= {"GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_TERMINAL_PROMPT": "0"}
    if index is not None:
        env["GIT_INDEX_FILE"] = str(index)
    command = ["git", "-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false", f"--git-dir={git_dir}", *args]
    done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        raise GradeError(f"`git {' '.join(args)}` in {cwd} failed: {done.stderr.strip()[-300:]}")
    return done.stdout


def patch_from_tree(tree: Path, base_commit: str) -> str:
    """The edits of a working tree (tracked and new files) against `base_commit`, as a patch for `grade_patch`.

    The tree was edited by a main agent, so its .git/ is untrusted: a planted config (core.fsmonitor, a
    `filter.X.clean` driver for its .gitattributes, a textconv, hooks) would run commands on the host. So the host
    never runs git with the tree's .git/ as its repository: a fresh git folder the host made fetches `base_commit`
    from it (upload-pack, which git keeps safe over untrusted repositories) and indexes the tree as its work tree.
    A `.git` below the top (a folder, a file naming a `gitdir:`, or a link) would make git read that repository as a
    submodule, wherever it points on the host: the folders holding one are left out of the patch. The tree and its
    .git/ are left as they were."""
    tree = Path(tree)
    dot_git = tree / ".git"
    if dot_git.is_symlink() or not dot_git.is_dir():
        raise GradeError(f"{tree} has no .git folder of its own (a link or a file there is not followed)")
    with tempfile.TemporaryDirectory(dir=run_root()) as scratch:
        git_dir = Path(scratch) / "git"
        _host_git(git_dir, "init", "--quiet", "--bare", "--template=", str(git_dir), cwd=Path(scratch))
        _host_git(git_dir, "fetch", "--quiet", "--no-tags", "--depth=1", str(dot_git.resolve()), base_commit, cwd=tree)
        index = Path(scratch) / "index"
        work = (f"--work-tree={tree}",)
        _host_git(git_dir, *work, "read-tree", base_commit, cwd=tree, index=index)
        _host_git(git_dir, *work, "add", "-A", "--", ".", *_nested_repositories(tree), cwd=tree, index=index)
        diff = ("diff", "--cached", "--binary", "--no-color", "--no-ext-diff", "--no-textconv", base_commit)
        return _host_git(git_dir, *work, *diff, cwd=tree, index=index)


def _nested_repositories(tree: Path) -> list[str]:
    """`:(exclude)` pathspecs for each folder below the top of `tree` holding a `.git` entry (links not followed)."""
    with fdtree.DirChain(tree) as chain:
        nested = sorted({str(Path(rel).parent) for rel, _ in fdtree.walk(chain.root_fd) if Path(rel).name == ".git"})
    return [f":(exclude,literal){rel}" for rel in nested if rel != "."]
