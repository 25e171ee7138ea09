"""Docker images pulled on first use, through the private engine the tests start. No registry is reachable offline,
so an image is made absent by tagging the locally built one under a registry reference (a port on loopback where
nothing listens) and removing the tag: the pull path is then taken for real and fails for real, its tries counted;
`never` refuses without trying; an image present is used without a pull."""

from __future__ import annotations

import logging
from pathlib import Path

import docker
import pytest

from terminus.sandbox import SandboxSpec, make_sandbox
from terminus.sandbox import pull as pull_module
from terminus.sandbox.docker import HOST_BINDS, HOST_IMAGE
from terminus.sandbox.pull import ImagePullError, pull_images

pytestmark = pytest.mark.docker

# loopback, a port nothing listens on: the engine's pull fails at once, without a network
ABSENT = "127.0.0.1:9/terminus-pull-test:absent"
# what the host image borrows from the host, bound by hand for a copy of it under another name
BINDS = tuple(b for b in HOST_BINDS if Path(b.partition(":")[0]).exists())


@pytest.fixture
def engine(docker_engine, monkeypatch):
    monkeypatch.setattr(pull_module, "PULL_BACKOFF_S", 0.0)  # the tries, not the waits between them
    monkeypatch.setattr(pull_module, "_pulled", set())
    monkeypatch.setattr(pull_module, "_failed", {})
    client = docker.DockerClient(base_url=docker_engine)
    yield docker_engine, client
    client.close()


def _absent(client, reference: str) -> str:
    """`reference` tagged on the host image and untagged again: an image the engine knew and no longer has."""
    client.images.get(HOST_IMAGE).tag(reference)
    client.images.remove(reference)
    with pytest.raises(docker.errors.ImageNotFound):
        client.images.get(reference)
    return reference


def _pull_lines(caplog) -> list[str]:
    """The log's line for each pull tried."""
    return [
        r.getMessage()
        for r in caplog.records
        if r.getMessage().startswith("pulling docker image ") and "(try" in r.getMessage()
    ]


def test_a_missing_image_is_pulled_on_first_use_and_its_failure_says_so(engine, caplog, tmp_path):
    url, client = engine
    image = _absent(client, ABSENT)
    caplog.set_level(logging.INFO, logger="terminus.sandbox.pull")
    with pytest.raises(ImagePullError) as err:
        make_sandbox(SandboxSpec("docker", image, docker_url=url, pull="missing"), tmp_path)
    message = str(err.value)
    assert image in message and f"after {pull_module.PULL_TRIES} tries" in message and "terminus swe pull" in message
    assert _pull_lines(caplog) == [f"pulling docker image {image} (try {i} of 3)" for i in (1, 2, 3)]
    failures = [r.getMessage() for r in caplog.records if r.getMessage().startswith(f"the pull of {image} failed")]
    assert len(failures) == 3
    # no container was left by the sandbox that did not start
    assert not client.containers.list(all=True, filters={"label": "terminus.sandbox"})
    # the next episode of that image fails at once, with the same reason: one set of tries serves a whole batch
    with pytest.raises(ImagePullError, match=r"after 3 tries.*\(not tried again yet\)"):
        make_sandbox(SandboxSpec("docker", image, docker_url=url, pull="missing"), tmp_path)
    assert len(_pull_lines(caplog)) == 3


def test_never_refuses_an_absent_image_without_trying(engine, caplog, tmp_path):
    url, client = engine
    image = _absent(client, ABSENT)
    caplog.set_level(logging.INFO, logger="terminus.sandbox.pull")
    with pytest.raises(ImagePullError, match=r"not present locally and pulling is off \(sandbox_pull: never") as err:
        make_sandbox(SandboxSpec("docker", image, docker_url=url, pull="never"), tmp_path)
    assert image in str(err.value) and f"docker pull {image}" in str(err.value)
    assert not _pull_lines(caplog)


def test_a_present_image_runs_without_a_pull_unless_always(engine, caplog, tmp_path):
    url, client = engine
    present = "127.0.0.1:9/terminus-pull-test:present"
    client.images.get(HOST_IMAGE).tag(present)
    try:
        caplog.set_level(logging.INFO, logger="terminus.sandbox.pull")
        with make_sandbox(SandboxSpec("docker", present, BINDS, docker_url=url), tmp_path) as box:
            assert box.run("echo ok", 30).output.strip() == "ok"
        assert not _pull_lines(caplog)
        # always: one pull per process even when present; the registry is down, so the local copy runs
        with make_sandbox(SandboxSpec("docker", present, BINDS, docker_url=url, pull="always"), tmp_path) as box:
            assert box.run("echo ok", 30).output.strip() == "ok"
        assert len(_pull_lines(caplog)) == 3
        with make_sandbox(SandboxSpec("docker", present, BINDS, docker_url=url, pull="always"), tmp_path) as box:
            assert box.run("echo ok", 30).output.strip() == "ok"
        assert len(_pull_lines(caplog)) == 3  # not again in this process
    finally:
        client.images.remove(present)


def test_pre_pulling_reports_each_image(engine):
    url, client = engine
    image = _absent(client, ABSENT)
    report = pull_images([HOST_IMAGE, image, HOST_IMAGE], url)
    assert report["present"] == [HOST_IMAGE] and report["pulled"] == []
    assert list(report["failed"]) == [image] and "after 3 tries" in report["failed"][image]


def test_an_unknown_pull_mode_is_refused():
    with pytest.raises(Exception, match="unknown pull mode 'sometimes'; choose one of missing, always, never"):
        SandboxSpec("docker", pull="sometimes")
