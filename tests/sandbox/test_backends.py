"""One behavioural suite, run over every sandbox backend that works on this machine."""

from __future__ import annotations

import re

import pytest

from terminus.sandbox import Limits, SandboxError, SandboxSpec, make_sandbox
from terminus.sandbox.apptainer import apptainer_path


def test_output_and_exit_code(sandbox_factory):
    box = sandbox_factory()
    result = box.run("echo hello; exit 3", 10)
    assert result.output == "hello\n"
    assert result.exit_code == 3
    assert not result.timed_out and not result.truncated


def test_stdout_and_stderr_interleaved_in_order(sandbox_factory):
    result = sandbox_factory().run("echo one; sleep 0.05; echo two >&2; sleep 0.05; echo three", 10)
    assert result.output.split() == ["one", "two", "three"]


def test_cwd_and_exports_persist_between_calls(sandbox_factory):
    box = sandbox_factory()
    assert box.run("mkdir -p build && cd build && export BUILD_KIND=release", 10).exit_code == 0
    result = box.run('basename "$PWD"; echo "$BUILD_KIND"', 10)
    assert result.output.split() == ["build", "release"]
    # a command that exits early still leaves its state behind, as in a terminal
    box.run("cd ..; exit 1", 10)
    assert box.run("basename $PWD", 10).output.strip() == "workspace"


def test_workspace_is_a_copy(sandbox_factory, tmp_path):
    (tmp_path / "README.md").write_text("original\n")
    box = sandbox_factory(tmp_path)
    assert box.run("cat README.md && echo changed > README.md && cat README.md", 10).output == "original\nchanged\n"
    assert (tmp_path / "README.md").read_text() == "original\n"
    assert (box.workspace / "README.md").read_text() == "changed\n"


def test_timeout_kills_and_flags(sandbox_factory):
    result = sandbox_factory().run("echo started; sleep 30; echo never", 1)
    assert result.timed_out and result.exit_code is None
    assert "started" in result.output and "never" not in result.output
    assert result.duration_s < 10


def test_sandbox_usable_after_timeout(sandbox_factory):
    box = sandbox_factory()
    box.run("export KEEP=1; sleep 30", 0.5)
    result = box.run("echo alive", 10)
    assert result.output == "alive\n" and result.exit_code == 0


def test_long_output_keeps_head_and_tail(sandbox_factory):
    box = sandbox_factory(limits=Limits(output_head_bytes=100, output_tail_bytes=100))
    result = box.run("seq 1 100000", 30)
    assert result.truncated
    assert result.output.startswith("1\n2\n3\n")
    assert result.output.rstrip().endswith("99999\n100000")
    head, elided, tail = re.split(r"\[\.\.\. (\d+) lines of output elided \.\.\.\]\n", result.output)  # at line ends
    assert head.count("\n") + int(elided) + tail.count("\n") == 100000
    assert result.output_bytes == len("\n".join(str(i) for i in range(1, 100001))) + 1


def test_terminal_noise_is_normalised(sandbox_factory):
    command = (
        r"printf '\033[1;31merror\033[0m: bad\n'; printf 'downloading 10%%\rdownloading 100%%\n'; "
        r"printf '\377\376ok\n'"
    )
    result = sandbox_factory().run(command, 10)
    assert result.output == "error: bad\ndownloading 100%\n\ufffdok\n"


def test_timeout_is_capped_by_limits(sandbox_factory):
    result = sandbox_factory(limits=Limits(max_timeout_s=1)).run("sleep 20", 3600)
    assert result.timed_out and result.duration_s < 10


def test_bad_command_and_closed_sandbox(sandbox_factory):
    box = sandbox_factory()
    with pytest.raises(ValueError):
        box.run("   ", 1)
    box.close()
    with pytest.raises(SandboxError):
        box.run("true", 1)


def test_syntax_error_is_an_ordinary_failure(sandbox_factory):
    box = sandbox_factory()
    result = box.run("if then fi", 10)
    assert result.exit_code != 0 and "syntax error" in result.output
    assert box.run("echo fine", 10).output == "fine\n"


def test_missing_source_folder_is_a_clear_error(tmp_path):
    with pytest.raises(SandboxError, match="does not exist"):
        make_sandbox(SandboxSpec("local"), tmp_path / "nope")


def test_unknown_backend_is_a_clear_error():
    with pytest.raises(SandboxError, match="unknown sandbox backend 'podman'"):
        make_sandbox(SandboxSpec("podman"))


@pytest.mark.skipif(
    apptainer_path() is None,
    reason="apptainer cannot be installed on this machine (no Debian "
    "package, no PyPI binary); its backend is exercised on HPC nodes only",
)
def test_apptainer_runs_a_command(tmp_path):  # pragma: no cover - needs apptainer
    box = make_sandbox(SandboxSpec("apptainer", "docker://debian:12-slim"), tmp_path)
    try:
        assert box.run("echo hi", 60).output == "hi\n"
    finally:
        box.close()
