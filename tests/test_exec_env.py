"""`terminus exec` and `terminus mcp` with the project's own environment: its `.venv` and `node_modules` found and
bound read-only at the workspace, `--bind HOST[:INSIDE]`, an interpreter out of the sandbox's view named, and a
repository whose links lead outside it never choosing what the sandbox shows (issue 44)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import anyio
import pytest
from mcp import ClientSession, stdio_client

from mcp_client import params, text_of
from terminus.sandbox.bwrap import bwrap_path
from terminus.sandbox.projectenv import visible
from terminus.sandbox.spec import Backend, SandboxSpec

TERMINUS = [sys.executable, "-m", "terminus.cli"]
needs_bwrap = pytest.mark.skipif(bwrap_path() is None, reason="bubblewrap is not installed")
MARKER = "the project's own environment"


def terminus(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([*TERMINUS, *args], capture_output=True, text=True, timeout=300)


def project(root: Path, venv_python: Path | None = None) -> Path:
    """A git project whose `.venv` and `node_modules` are ignored (so the workspace copy leaves them out), each
    holding a marker file; `.venv/bin/python` links to `venv_python` (default: this interpreter)."""
    repo = root / "proj"
    (repo / ".venv" / "bin").mkdir(parents=True)
    (repo / ".venv" / "pyvenv.cfg").write_text("home = /usr/bin\n")
    (repo / ".venv" / "bin" / "python").symlink_to(venv_python or os.path.realpath(sys.executable))
    (repo / ".venv" / "marker.txt").write_text(MARKER + "\n")
    (repo / "node_modules" / "left-pad").mkdir(parents=True)
    (repo / "node_modules" / "left-pad" / "index.js").write_text("module.exports = 'left-pad'\n")
    (repo / ".gitignore").write_text(".venv/\nnode_modules/\ntarget/\n")
    (repo / "test_x.py").write_text("def test_x():\n    assert True\n")
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    return repo


def run_exec(repo: Path, command: str, *flags: str) -> tuple[subprocess.CompletedProcess, dict]:
    """`terminus exec --sandbox bwrap --json` asked to run `command` (the scripted expert runs a named command)."""
    done = terminus("exec", "--repo", str(repo), "--query", f"Run `{command}`", "--sandbox", "bwrap", "--json", *flags)
    assert done.returncode in (0, 1), done.stderr
    return done, json.loads(done.stdout)


def outputs(record: dict) -> str:
    return "\n".join(m["content"] for m in record["messages"] if m["role"] == "tool")


@needs_bwrap
def test_the_projects_venv_and_node_modules_are_bound_read_only(tmp_path):
    repo = project(tmp_path)
    (repo / "target" / "debug").mkdir(parents=True)  # cargo's build folder: named, not bound
    command = "bash -c 'cat .venv/marker.txt node_modules/left-pad/index.js; touch .venv/new node_modules/new'"
    done, record = run_exec(repo, command)
    seen = outputs(record)
    assert MARKER in seen and "module.exports = 'left-pad'" in seen
    assert seen.count("Read-only file system") == 2 and not (repo / ".venv" / "new").exists()
    note = done.stderr
    assert "terminus exec: .venv (Python virtual environment) bound read-only at /workspace/.venv" in note
    assert "terminus exec: node_modules (node packages) bound read-only at /workspace/node_modules" in note
    assert "terminus exec: target/ (cargo's build folder) not bound: cargo writes into it" in note
    # local takes no binds: said, never silently ignored
    local = terminus("exec", "--repo", str(repo), "--query", "run the tests", "--sandbox", "local")
    assert ".venv (Python virtual environment) not bound: the local sandbox takes no binds" in local.stderr
    bad = terminus("exec", "--repo", str(repo), "--query", "x", "--sandbox", "local", "--bind", str(tmp_path))
    assert bad.returncode == 2 and "--bind: the local sandbox takes no binds" in bad.stderr


@needs_bwrap
def test_an_interpreter_out_of_view_is_named_and_bind_shows_it(tmp_path):
    """A `.venv` whose interpreter lives under /tmp (bwrap's private /tmp hides it) is named with the --bind that
    shows it, and not bound until then; a command that cannot start names the host path to bind."""
    interpreter = tmp_path / "pythons" / "cpython-3.12"
    (interpreter / "bin").mkdir(parents=True)
    python = interpreter / "bin" / "python3"
    python.write_text("#!/bin/sh\necho hidden interpreter ran\n")
    python.chmod(0o755)
    repo = project(tmp_path, venv_python=python)
    done, record = run_exec(repo, "bash -c 'cat .venv/marker.txt'")
    assert (
        f"terminus exec: .venv (Python virtual environment) not bound: its interpreter {python} is outside the bwrap "
        f"sandbox's view; show it with --bind {interpreter} (read-only), and .venv is bound"
    ) in done.stderr
    assert MARKER not in outputs(record)
    done, record = run_exec(repo, "bash -c '.venv/bin/python'", "--bind", str(interpreter))
    assert "bound read-only at /workspace/.venv" in done.stderr, done.stderr
    assert "hidden interpreter ran" in outputs(record)
    # A command that cannot start, naming a host path the sandbox hides: the path is named, with the flag.
    done, record = run_exec(repo, f"bash {python}")
    assert [t["exit_code"] for t in record["turns"] if t["command"].startswith(f"bash {python}")] == [127]
    assert f"{python} exists on the host but the bwrap sandbox does not show it" in done.stderr, done.stderr
    assert "--bind PATH shows it read-only" in done.stderr


@needs_bwrap
def test_links_in_the_repository_never_choose_what_the_sandbox_shows(tmp_path):
    secret = tmp_path / "secrets"
    secret.mkdir()
    (secret / "key.txt").write_text("TOP-SECRET\n")
    repo = tmp_path / "proj"
    repo.mkdir()
    (repo / "test_x.py").write_text("def test_x():\n    assert True\n")
    (repo / ".venv").symlink_to(secret)  # a cloned project that "ships" a .venv
    (repo / "node_modules").symlink_to("/etc")
    (repo / "sub").symlink_to(tmp_path)
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    done, record = run_exec(repo, "bash -c 'cat .venv/key.txt; ls node_modules/ | head -3; echo done'")
    assert "TOP-SECRET" not in done.stdout
    assert f".venv (Python virtual environment) not bound: it is a link (to {secret})" in done.stderr
    assert "node_modules (node packages) not bound: it is a link (to /etc)" in done.stderr
    # --bind through the repository's link is refused; the resolved folder, named as itself, is the user's choice
    for bind in (f"{repo}/.venv", f"{repo}/sub/secrets", f"{repo}/sub/secrets:/workspace/keys"):
        refused = terminus("exec", "--repo", str(repo), "--query", "x", "--sandbox", "bwrap", "--bind", bind)
        assert refused.returncode == 2 and "a link in the repository leads outside it" in refused.stderr, bind
        assert "TOP-SECRET" not in refused.stdout
    done, record = run_exec(repo, "cat /workspace/keys/key.txt", "--bind", f"{secret}:/workspace/keys")
    assert "TOP-SECRET" in outputs(record)
    # a bind may not cover the sandbox's own folders
    for inside in ("/workspace", "/", "/run", "/run/terminus-control/x"):
        refused = terminus(
            "exec", "--repo", str(repo), "--query", "x", "--sandbox", "bwrap", "--bind", f"/usr:{inside}"
        )
        assert refused.returncode == 2 and "is the sandbox's own" in refused.stderr, inside


@needs_bwrap
def test_mcp_binds_the_project_environment_and_names_what_it_cannot_see(tmp_path):
    hidden = tmp_path / "elsewhere" / "tool.sh"
    hidden.parent.mkdir()
    hidden.write_text("echo hi\n")
    repo, kept = project(tmp_path), tmp_path / "kept"
    query = "Run `bash -c 'cat .venv/marker.txt'`"
    args = ("--repo", str(repo), "--sandbox", "bwrap", "--trajectories", str(kept))

    async def session():
        async with (
            stdio_client(params(*args)) as (read, write),
            ClientSession(read, write) as client,
        ):
            await client.initialize()
            bound = await client.call_tool("execution_subagent", {"query": query, "description": ""})
            unseen = await client.call_tool("execution_subagent", {"query": f"Run `bash {hidden}`", "description": ""})
            return text_of(bound), text_of(unseen)

    bound, unseen = anyio.run(session)
    first = json.loads((kept / "trajectories.jsonl").read_text().splitlines()[0])
    assert MARKER in outputs(first) and "Command: bash -c 'cat .venv/marker.txt'" in bound, bound
    assert f"note: {hidden} exists on the host but the bwrap sandbox does not show it" in unseen, unseen
    assert "--bind PATH" in unseen


def test_what_each_backend_shows_of_the_host():
    bwrap, docker = SandboxSpec("bwrap"), SandboxSpec("docker")
    assert visible("/usr/bin/python3", bwrap, Backend.BWRAP) and not visible("/tmp/x/python", bwrap, Backend.BWRAP)
    assert visible("/tmp/x/python", SandboxSpec("bwrap", binds=("/tmp:/tmp:ro",)), Backend.BWRAP)
    assert not visible("/tmp/x/python", SandboxSpec("bwrap", binds=("/tmp:/elsewhere:ro",)), Backend.BWRAP)
    # docker's host image: only its binds (the host's /usr among them); another image: its own system, not known
    assert visible("/usr/bin/python3", docker, Backend.DOCKER) and not visible(
        "/opt/py/python", docker, Backend.DOCKER
    )
    other = SandboxSpec("docker", image="python:3.12")
    assert visible("/opt/py/python", other, Backend.DOCKER) and not visible("/home/u/py", other, Backend.DOCKER)
