"""What a command prints does not depend on where the repository was cloned: the Python environment on the
harness's PATH appears at a fixed path inside bwrap. CI's checkout is not /work/main, and the venv's path used to
reach the training data ("[toolchain: /work/main/.venv/bin/python3 ...]", tracebacks into site-packages), so SFT
read other tokens in CI than in the run that made results/cached/."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from terminus.sandbox import SandboxSpec, make_sandbox
from terminus.sandbox.bwrap import bwrap_path

needs_bwrap = pytest.mark.skipif(bwrap_path() is None, reason="bubblewrap is not installed")

PROBE = "command -v python3; python3 -c 'import sys; print(sys.prefix, sys.executable)'; echo \"$PATH\""


def _venv(path):
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(path)], check=True)
    return path


@needs_bwrap
def test_a_venv_prints_the_same_paths_wherever_the_clone_is(tmp_path, monkeypatch):
    outputs = []
    for clone in (tmp_path / "work" / "main", tmp_path / "check" / "work" / "main"):
        venv = _venv(clone / ".venv")
        monkeypatch.setenv("PATH", f"{venv}/bin:/usr/local/bin:/usr/bin:/bin")
        with make_sandbox(SandboxSpec("bwrap"), None) as box:
            result = box.run(PROBE, 30)
        assert result.exit_code == 0, result.output
        outputs.append(result.output)
    assert outputs[0] == outputs[1]
    assert outputs[0].split("\n")[:2] == [
        "/toolchains/venv/bin/python3",
        "/toolchains/venv /toolchains/venv/bin/python3",
    ]
    assert str(tmp_path) not in outputs[0]


@needs_bwrap
def test_two_venvs_keep_their_order_and_are_read_only(tmp_path, monkeypatch):
    first, second = _venv(tmp_path / "a"), _venv(tmp_path / "b")
    monkeypatch.setenv("PATH", f"{first}/bin:/usr/bin:{second}/bin:/bin")
    with make_sandbox(SandboxSpec("bwrap"), None) as box:
        assert box.env()["PATH"] == "/toolchains/venv/bin:/usr/bin:/toolchains/venv-2/bin:/bin"
        assert box.run("ls /toolchains", 30).output.split() == ["venv", "venv-2"]
        written = box.run("touch /toolchains/venv/bin/x /toolchains/new", 30)
    assert written.exit_code != 0
    assert not os.path.exists(first / "bin" / "x")


in_venv = pytest.mark.skipif(sys.prefix == sys.base_prefix, reason="the tests do not run in a virtual environment")


@needs_bwrap
@in_venv
def test_a_host_folder_named_like_a_venv_that_is_not_one_stays_as_it_is(tmp_path, monkeypatch):
    (tmp_path / "tools" / "bin").mkdir(parents=True)
    monkeypatch.setenv("PATH", f"{tmp_path}/tools/bin:/usr/bin:/bin")
    with make_sandbox(SandboxSpec("bwrap"), None) as box:  # no venv on PATH: the harness's own comes first
        assert box.env()["PATH"] == f"/toolchains/venv/bin:{tmp_path}/tools/bin:/usr/bin:/bin"
        assert box.run("ls /toolchains", 30).output.split() == ["venv"]


@needs_bwrap
@in_venv
def test_the_shell_a_stage_starts_from_changes_nothing_a_command_prints(monkeypatch):
    """The same command prints the same lines whether the harness was started with its venv on PATH (snakemake's
    `terminus`) or from a plain shell (`.venv/bin/python benchmarks/...`). The plain shell once made the expert's
    `[toolchain: ...]` line name the host's pyenv shim, which no training conversation held."""
    outputs = []
    plain = ":".join(e for e in os.environ["PATH"].split(":") if not e.startswith(sys.prefix))
    for path in (f"{sys.prefix}/bin:{plain}", plain):
        monkeypatch.setenv("PATH", path)
        with make_sandbox(SandboxSpec("bwrap"), None) as box:
            outputs.append(box.run(PROBE, 30).output)
    assert outputs[0] == outputs[1] and outputs[0].startswith("/toolchains/venv/bin/python3\n"), outputs


@in_venv
def test_the_local_sandbox_puts_the_harness_venv_first_when_path_names_none(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    with make_sandbox(SandboxSpec("local"), None) as box:
        assert box.env()["PATH"] == f"{sys.prefix}/bin:/usr/bin:/bin"
    monkeypatch.setenv("PATH", f"{tmp_path}/v/bin:/usr/bin")  # not a venv (no pyvenv.cfg): still first
    with make_sandbox(SandboxSpec("local"), None) as box:
        assert box.env()["PATH"] == f"{sys.prefix}/bin:{tmp_path}/v/bin:/usr/bin"
