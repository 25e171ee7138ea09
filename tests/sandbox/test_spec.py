"""The sandbox's spec (`sandbox/spec.py`): one list of backends (the CLI's choices, the registry's keys), and every
rule of which image and which binds a task gets, on which backend."""

from __future__ import annotations

import pytest

from terminus.sandbox import BACKENDS, Backend, SandboxError, SandboxSpec


def test_every_backend_has_its_class_and_its_name():
    assert set(BACKENDS) == set(Backend)
    assert all(cls.name == backend for backend, cls in BACKENDS.items())  # trajectories record the class's name


def test_a_name_becomes_the_backend_and_an_unknown_one_is_refused_where_given():
    assert SandboxSpec("docker").backend is Backend.DOCKER and SandboxSpec("docker") == SandboxSpec(Backend.DOCKER)
    assert [b for b in Backend if b.runs_image] == [Backend.DOCKER, Backend.APPTAINER]
    with pytest.raises(SandboxError, match="unknown sandbox backend 'podman'; choose one of local, bwrap, docker"):
        SandboxSpec("podman")


def test_a_task_brings_its_image_where_the_backend_runs_one():
    run = SandboxSpec("docker", "terminus-sandbox:toolchains", ("/opt/jdk",), docker_url="unix:///d.sock")
    swe = run.for_task("swe/image:1", ["/opt/venv", "/opt/jdk"])
    assert swe == SandboxSpec("docker", "swe/image:1", ("/opt/venv", "/opt/jdk"), docker_url="unix:///d.sock")
    assert run.for_task(None) == run  # a task without an image runs in the run's
    assert SandboxSpec("apptainer").for_task("swe/image:1").image == "docker://swe/image:1"
    assert SandboxSpec("apptainer").for_task("/images/x.sif").image == "/images/x.sif"
    assert SandboxSpec("bwrap").for_task("swe/image:1") == SandboxSpec("bwrap")


def test_a_task_brings_its_binds_where_binds_reach_the_commands():
    assert SandboxSpec("bwrap", binds=("/b",)).for_task(None, ["/a", "/b"]).binds == ("/a", "/b")
    assert SandboxSpec(None).for_task(None, ["/a"]).binds == ("/a",)  # the default backend may be bwrap
    assert SandboxSpec("local").for_task(None, ["/a"]).binds == ()  # local sees the host as it is
    assert SandboxSpec("apptainer", "x.sif").for_task(None, ["/a"]).binds == ()  # apptainer takes none
