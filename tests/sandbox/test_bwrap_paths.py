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
from terminus.train.evaluate import harness_path

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
def test_a_host_folder_named_like_a_venv_that_is_not_one_stays_as_it_is(tmp_path, monkeypatch):
    (tmp_path / "tools" / "bin").mkdir(parents=True)
    monkeypatch.setenv("PATH", f"{tmp_path}/tools/bin:/usr/bin:/bin")
    with make_sandbox(SandboxSpec("bwrap"), None) as box:
        assert box.env()["PATH"] == f"{tmp_path}/tools/bin:/usr/bin:/bin"
        assert box.run("ls /toolchains 2>/dev/null | wc -l", 30).output.strip() == "0"


@in_venv
def test_harness_path_puts_the_venv_first_only_where_path_names_none(tmp_path):
    """The pipeline's PATH (snakemake starts `terminus` with the venv first), for held-out evaluation started from
    a plain shell; a PATH that names a venv is left as it is, and a folder merely called bin is no venv."""
    assert harness_path("/usr/bin:/bin") == f"{sys.prefix}/bin:/usr/bin:/bin"
    assert harness_path(f"{tmp_path}/v/bin:/usr/bin") == f"{sys.prefix}/bin:{tmp_path}/v/bin:/usr/bin"
    venv = _venv(tmp_path / "other")
    assert harness_path(f"/usr/bin:{venv}/bin") == f"/usr/bin:{venv}/bin"


@needs_bwrap
@in_venv
def test_held_out_evaluation_sees_the_pipelines_toolchain_from_a_plain_shell(tmp_path, monkeypatch):
    """A benchmark started from a plain shell (no venv on PATH) once ran its held-out episodes with the host's
    pyenv shim where every training episode had `/toolchains/venv/bin/python3`, a line the model never saw.
    `held_out` sets the pipeline's PATH before any episode; the sandbox itself keeps the caller's (a user's
    `terminus exec` runs their project with their python)."""
    from terminus.tasks.record import TaskFileError
    from terminus.train.evaluate import held_out

    plain = ":".join(e for e in os.environ["PATH"].split(":") if not e.startswith(sys.prefix))
    monkeypatch.setenv("PATH", plain)
    with make_sandbox(SandboxSpec("bwrap"), None) as box:
        assert not box.run("command -v python3", 30).output.startswith("/toolchains/venv/")
    with pytest.raises(TaskFileError):  # no tasks file: it fails after setting PATH, before any episode
        held_out("scripted", tmp_path / "none.jsonl", tmp_path / "out.jsonl", sandbox=SandboxSpec("bwrap"),
                 max_turns=1, concurrency=1, policy="scripted")  # fmt: skip
    with make_sandbox(SandboxSpec("bwrap"), None) as box:
        assert box.run("command -v python3", 30).output.strip() == "/toolchains/venv/bin/python3"
