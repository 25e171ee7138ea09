"""read_file / write_file / list_files: one behaviour on every backend that runs here (local, bwrap; docker with the
`docker` mark), since they go through the sandbox's own command channel and see the files as commands do."""

from __future__ import annotations

import os
import time

import pytest

from terminus.sandbox import Limits, OutsideWorkspaceError

AWKWARD = (
    "single ' double \" back ` $(touch pwned) $HOME \\ backslash %s %% \\n literal\n"
    "crlf line\r\n\ttab, NUL \x00 and escape \x1b[31m kept\n"
    "unicode: héllo ✓ 🐍 Ω\n"
    "no newline at the end"
)


def test_text_round_trips_byte_for_byte(sandbox_factory):
    box = sandbox_factory()
    assert box.run("mkdir -p pkg/sub", 10).exit_code == 0
    box.write_file("pkg/sub/awkward.txt", AWKWARD)
    assert box.read_file("pkg/sub/awkward.txt") == AWKWARD
    # the bytes are where the commands see them, and on the host copy of the workspace
    assert (box.workspace / "pkg" / "sub" / "awkward.txt").read_bytes() == AWKWARD.encode()
    assert box.run("wc -c < pkg/sub/awkward.txt", 10).output.strip() == str(len(AWKWARD.encode()))
    assert box.run("ls pwned", 10).exit_code != 0  # nothing in the text was run
    # absolute paths as the terminal shows them name the same file; an existing file is replaced
    box.write_file(f"{box.inside_workspace}/pkg/sub/awkward.txt", "short\n")
    assert box.read_file("pkg/sub/awkward.txt") == "short\n"
    box.write_file("empty", "")
    assert box.read_file("empty") == "" and box.run("wc -c < empty", 10).output.strip() == "0"


def test_big_files_bypass_the_output_limits(sandbox_factory):
    """Nothing travels as command output or in the command line: a file far beyond both is exact."""
    box = sandbox_factory(limits=Limits(output_head_bytes=100, output_tail_bytes=100))
    text = "".join(f"line {i} ✓\n" for i in range(300_000))  # 3.6 MB
    box.write_file("big.txt", text)
    assert box.read_file("big.txt") == text


def test_paths_outside_the_workspace_are_refused(sandbox_factory):
    box = sandbox_factory()
    secret = box.run('echo secret > "$TMPDIR/s" && ln -s "$TMPDIR/s" link && ln -s / root && echo $TMPDIR/s', 10)
    assert secret.exit_code == 0, secret.output
    for path in ("../x", "pkg/../../x", "/etc/hostname", f"{box.inside_workspace}/../x", "link", "root/etc/hostname"):
        with pytest.raises(OutsideWorkspaceError):
            box.read_file(path)
        with pytest.raises(OutsideWorkspaceError):
            box.write_file(path, "changed\n")
    with pytest.raises(OutsideWorkspaceError):
        box.list_files("root")
    assert box.run('cat "$TMPDIR/s"', 10).output == "secret\n"  # the link's target was not written
    (box.workspace / "inside.txt").write_text("in\n")
    assert box.run("ln -s inside.txt alias", 10).exit_code == 0
    assert box.read_file("alias") == "in\n"  # a link that stays inside is followed


def test_missing_files_and_folders_are_clear_errors(sandbox_factory):
    box = sandbox_factory()
    with pytest.raises(FileNotFoundError, match=r"no such file or folder in the sandbox: 'nope\.txt'"):
        box.read_file("nope.txt")
    with pytest.raises(FileNotFoundError, match=r"no such folder for this file in the sandbox: 'no/dir\.txt'"):
        box.write_file("no/dir.txt", "x")
    assert box.run("mkdir dir", 10).exit_code == 0
    with pytest.raises(IsADirectoryError):
        box.read_file("dir")
    with pytest.raises(IsADirectoryError):
        box.write_file("dir", "x")
    box.write_file("a.txt", "a")
    with pytest.raises(NotADirectoryError):
        box.list_files("a.txt")
    with pytest.raises(FileNotFoundError):
        box.list_files("nope")


def test_undecodable_bytes_are_strict_unless_asked(sandbox_factory):
    box = sandbox_factory()
    assert box.run(r"printf 'ok \377\376\n' > latin.txt", 10).exit_code == 0
    with pytest.raises(UnicodeDecodeError):
        box.read_file("latin.txt")
    assert box.read_file("latin.txt", errors="replace") == "ok \ufffd\ufffd\n"


def test_listing_and_the_shell_state_are_untouched(sandbox_factory):
    box = sandbox_factory()
    made = box.run("mkdir -p src/deep .hidden && touch top src/a src/deep/b .hidden/c && ln -s src dirlink", 10)
    assert made.exit_code == 0, made.output
    assert box.list_files() == [".hidden/c", "dirlink", "src/a", "src/deep/b", "top"]
    assert box.list_files("src") == ["a", "deep/b"]
    assert box.run("cd src && export KEPT=yes", 10).exit_code == 0
    box.write_file("a", "relative to the workspace, not to the shell's folder (src)\n")
    assert (box.workspace / "src" / "a").read_text() == "" and "a" in box.list_files()
    box.read_file("top")
    assert box.run('basename "$PWD"; echo "$KEPT"', 10).output.split() == ["src", "yes"]
    assert box.run("export PATH=/nowhere", 10).exit_code == 0  # an agent's PATH cannot break the file tools
    box.write_file("top", "still works\n")
    assert box.read_file("top") == "still works\n"


def test_a_write_moves_the_modification_time_on_and_never_into_the_future(sandbox_factory):
    """Two writes within one second still leave different whole-second mtimes (what .pyc checks compare), and no
    write leaves a modification time ahead of the clock: make run within that second warned of clock skew, so the
    output an agent read (and the tables) changed with load."""
    box = sandbox_factory()
    box.write_file("m.py", "x = 1\n")
    first = int(os.stat(box.workspace / "m.py").st_mtime)
    for n in range(3):
        box.write_file("m.py", f"x = {n + 2}\n")
        assert os.stat(box.workspace / "m.py").st_mtime <= time.time()
    assert int(os.stat(box.workspace / "m.py").st_mtime) > first
