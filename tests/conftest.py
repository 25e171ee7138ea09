"""Shared fixtures: sandboxes of every backend that runs here, and a private Docker engine."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from terminus.sandbox import Limits, SandboxSpec, make_sandbox
from terminus.sandbox.bwrap import bwrap_path

ROOT = Path(__file__).resolve().parents[1]
# pytest removes old temp folders with shutil.rmtree, which recurses once per level: a tree 1,100 folders deep that a
# sandbox test made (tests/security/test_copy_boundary.py), left by a killed run, would end every later session in a
# RecursionError that hides its summary. terminus itself removes trees iteratively (sandbox/fdtree.py).
sys.setrecursionlimit(max(sys.getrecursionlimit(), 20_000))
pytest_plugins = ["fault_endpoint"]  # the misbehaving endpoint of the fault tests

# These flags keep dockerd from touching the host's network and firewall. Never start it without them.
DOCKERD_SAFE_FLAGS = [
    "--bridge=none",
    "--iptables=false",
    "--ip6tables=false",
    "--ip-forward=false",
    "--ip-masq=false",
]


@pytest.fixture(scope="session")
def docker_engine():
    """A Docker engine on a private socket, with the registry-free sandbox image built; stopped by PID."""
    if os.environ.get("TERMINUS_SKIP_DOCKER"):
        pytest.skip("TERMINUS_SKIP_DOCKER is set")
    dockerd = shutil.which("dockerd")
    if dockerd is None:
        pytest.skip("dockerd is not installed (make sysdeps installs Debian's docker.io)")
    import docker

    home = Path(tempfile.mkdtemp(prefix="tdk-"))  # short: unix socket paths are limited to 108 bytes
    sock = home / "docker.sock"
    log = open(home / "dockerd.log", "wb")  # noqa: SIM115 - closed in teardown
    proc = subprocess.Popen(
        [
            dockerd,
            f"--host=unix://{sock}",
            f"--data-root={home / 'data'}",
            f"--exec-root={home / 'exec'}",
            f"--pidfile={home / 'docker.pid'}",
            "--storage-driver=vfs",
            *DOCKERD_SAFE_FLAGS,
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    client = None
    try:
        deadline = time.monotonic() + 60
        while True:
            if proc.poll() is not None:
                pytest.fail(f"dockerd exited with {proc.returncode}: {(home / 'dockerd.log').read_text()[-2000:]}")
            with contextlib.suppress(Exception):
                client = docker.DockerClient(base_url=f"unix://{sock}")
                client.ping()
                break
            if time.monotonic() > deadline:
                pytest.fail("dockerd did not answer within 60 s")
            time.sleep(0.3)
        from terminus.sandbox.docker import HOST_IMAGE

        client.images.build(path=str(ROOT / "docker" / "sandbox"), tag=HOST_IMAGE, rm=True)
        yield f"unix://{sock}"
    finally:
        if client is not None:
            for container in client.containers.list(all=True, filters={"label": "terminus.sandbox"}):
                with contextlib.suppress(Exception):
                    container.remove(force=True)
            client.close()
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        log.close()
        shutil.rmtree(home, ignore_errors=True)


def _backends() -> list:
    params = [pytest.param("local", id="local")]
    params.append(
        pytest.param("bwrap", id="bwrap", marks=pytest.mark.skipif(bwrap_path() is None, reason="bwrap missing"))
    )
    params.append(pytest.param("docker", id="docker", marks=pytest.mark.docker))
    return params


@pytest.fixture(params=_backends())
def backend(request) -> str:
    return request.param


@pytest.fixture
def sandbox_factory(backend, request):
    """Make sandboxes of the parametrised backend; all are closed after the test."""
    made = []

    def make(source: Path | None = None, limits: Limits | None = None, network: bool = False):
        engine = request.getfixturevalue("docker_engine") if backend == "docker" else None
        box = make_sandbox(SandboxSpec(backend, docker_url=engine), source, limits, network)  # docker: the host image
        made.append(box)
        return box

    yield make
    for box in made:
        box.close()


@pytest.fixture(scope="session")
def tiny_model(tmp_path_factory):
    """The tiny Qwen3-architecture model, built once per test session (a few seconds)."""
    from terminus.train.tiny import build_tiny_model

    return build_tiny_model(tmp_path_factory.mktemp("tiny") / "model")
