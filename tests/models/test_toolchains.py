"""The observation reader against the terminal's own status lines, and the runner table's dispatch."""

from __future__ import annotations

import pytest

from terminus.agent.terminal import observation
from terminus.models.scripted import recipes
from terminus.models.toolchains import RUNNERS, Status, read_status, runner_for
from terminus.sandbox import CommandResult, SandboxSpec, make_sandbox


@pytest.mark.parametrize(
    ("result", "status"),
    [
        (CommandResult("c", "out\n", 0, 0.1), Status(0, False)),
        (CommandResult("c", "", -9, 0.1), Status(-9, False)),
        (CommandResult("c", "x", None, 3.0, timed_out=True), Status(None, True)),
        (CommandResult("c", "x", 137, 0.1, output_bytes=99, output_capped=True), Status(None, False)),
    ],
)
def test_status_reads_back_what_the_terminal_prints(result, status):
    assert read_status(observation(result)) == status


def test_status_of_real_commands():
    with make_sandbox(SandboxSpec("local")) as box:
        assert read_status(observation(box.run("echo '[exit code 7]'; exit 3", 10))) == Status(3, False)
        assert read_status(observation(box.run("sleep 5", 0.3))).timed_out


@pytest.mark.parametrize(
    ("kind", "runners"),
    [
        ("python", ["compileall", "pytest"]),
        ("node", ["node --test"]),
        ("cmake", ["cmake/make build", "ctest"]),
        ("rust", ["cargo", "cargo"]),
        ("go", ["go", "go"]),
        ("make", ["cmake/make build", "any"]),
    ],
)
def test_each_recipe_command_has_its_runner(kind, runners):
    build, test, _ = recipes()[kind]
    commands = [c for c, _ in ([build] if build else []) + [test]]
    assert [runner_for(c).name for c in commands] == runners
    assert runner_for("ls -la").name == RUNNERS[-1].name == "any"
