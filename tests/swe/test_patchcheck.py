"""Which paths a patch names, read as git apply and GNU patch read it: hunk bodies skipped by their line counts,
every header checked (git, unified, context, Index:, rename/copy), quoted paths decoded, symlink targets checked."""

from __future__ import annotations

import pytest

from terminus.swe.patchcheck import patch_problem, unsafe_paths

from .repos import DATA


@pytest.mark.parametrize("repo", ["ledger", "units", "slugify"])
def test_the_fixture_patches_are_safe(repo):
    for kind in ("gold", "test", "partial"):
        assert unsafe_paths((DATA / "repos" / repo / f"{kind}.patch").read_text()) == []


def test_hunk_lines_that_look_like_headers_are_content():
    """Removing the SQL comment `-- a/.git/config` gives a line `--- a/.git/config` inside a hunk: content."""
    patch = (
        "diff --git a/q.sql b/q.sql\n--- a/q.sql\n+++ b/q.sql\n@@ -1,2 +1,2 @@\n"
        "--- a/.git/config\n+++ b/.git/config\n select 1;\n"
    )
    assert unsafe_paths(patch) == []


@pytest.mark.parametrize(
    ("patch", "named"),
    [
        # a header right after a hunk that its counts close
        ("--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n--- a/y\n+++ b/.git/config\n@@ -1 +1 @@\n-a\n+b\n", ".git/config"),
        # a hunk that claims more lines than it has ends at the first line that is no hunk line
        ("--- a/x\n+++ b/x\n@@ -1,5 +1,5 @@\n-a\n+b\nrename to ../up\n", "../up"),
        ('diff --git "a/.git/hooks/x" "b/.git/hooks/x"\nnew file mode 100755\n', ".git/hooks/x"),
        ('diff --git a/ok "b/\\056git/config"\n', ".git/config"),  # \056 is "."
        ("diff --git a/ok b/ok\ncopy from ok\ncopy to sub/../../out\n", "sub/../../out"),
        ("Index: .git/config\n", ".git/config"),
        ("*** a/.git/config\t2024-01-01\n--- b/.git/config\t2024-01-01\n***************\n", ".git/config"),
        ("--- /dev/null\n+++ /etc/cron.d/x\n@@ -0,0 +1 @@\n+x\n", "/etc/cron.d/x"),
        ("--- /dev/null\n+++ b//etc/x\n@@ -0,0 +1 @@\n+x\n", "/etc/x"),
        ("--- /dev/null\n+++ b/sub/.Git/HEAD\n@@ -0,0 +1 @@\n+x\n", "sub/.Git/HEAD"),
        ("diff --git a/l b/l\nnew file mode 120000\n--- /dev/null\n+++ b/l\n@@ -0,0 +1 @@\n+../../etc\n", "l"),
        ("diff --git a/d/l b/d/l\nnew file mode 120000\n--- /dev/null\n+++ b/d/l\n@@ -0,0 +1 @@\n+../.git\n", "d/l"),
        ("diff --git a/l b/l\nnew file mode 120000\n--- /dev/null\n+++ b/l\n@@ -0,0 +1 @@\n+/etc/passwd\n", "l"),
    ],
)
def test_paths_outside_the_tree_or_in_git_are_found(patch, named):
    found = unsafe_paths(patch)
    assert found and found[0].startswith(named), found
    assert patch_problem(patch).startswith(f"the patch touches {named}")


def test_ordinary_names_near_git_are_fine():
    patch = "".join(
        f"--- a/{p}\n+++ b/{p}\n@@ -1 +1 @@\n-a\n+b\n" for p in (".github/workflows/ci.yml", ".gitignore", "a..b/c")
    )
    link = "diff --git a/d/l b/d/l\nnew file mode 120000\n--- /dev/null\n+++ b/d/l\n@@ -0,0 +1 @@\n+../src/x\n"
    assert unsafe_paths(patch + link) == [] and patch_problem(patch + link) is None


def test_patch_problems_are_the_predictions():
    assert patch_problem(None) is None and patch_problem("") is None
    assert patch_problem(7) == "the patch is not text (a JSON number)"
    assert "lone surrogate at character 3" in patch_problem("abc\ud800")
