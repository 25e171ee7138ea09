"""The sandbox boundary: the host never follows a path that code in the sandbox can write.

Code in a sandbox plants symbolic links (to a host file it cannot see, and to a host path that does not exist yet)
at every name the host reads or writes in the folders the sandbox can write, and hostile shell state that turns
the host's own file transfers into link plants. After each attack the host file is untouched, no host file
appears, and no secret reaches what the host returns. docs/ARCHITECTURE.md ("The sandbox boundary") lists the
host-side access paths these walk.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from builders import TERMINUS, write_files
from terminus.sandbox import SandboxError, hostfs
from terminus.sandbox.workspace import INSIDE_CONTROL, INSIDE_STATE

NEEDS_ISOLATION = "local backend: commands run as the harness's user with no filesystem isolation, by design"
# Every name the host reads or writes in the sandbox's folders, planted in each folder the sandbox can see.
HOST_NAMES = ("command", "wrapper.sh", "cwd", "env", "terminus-swe-test.log", ".terminus-junit.xml")


@pytest.fixture
def host(tmp_path):
    """A host file the sandbox must not change, a secret it must not read (mode 600), and a path it must not create."""
    folder = tmp_path / "host"
    folder.mkdir()
    victim, secret = folder / "victim.txt", folder / "secret.txt"
    victim.write_text("host data\n")
    secret.write_text("TOP-SECRET-3f9c\n")
    secret.chmod(0o600)
    return {"victim": victim, "secret": secret, "created": folder / "created-by-sandbox", "folder": folder}


def _intact(host: dict) -> None:
    assert host["victim"].read_text() == "host data\n"
    assert not host["created"].exists(), "a host file appeared through a planted link"
    assert sorted(p.name for p in host["folder"].iterdir()) == ["secret.txt", "victim.txt"]


def plant(target: Path, names=HOST_NAMES) -> str:
    """A command that replaces every host-touched name in every folder the sandbox can see by a link to `target`."""
    folders = f'{INSIDE_STATE} {INSIDE_CONTROL} /tmp "$HOME" "$TERMINUS_WORKSPACE"'
    links = " ".join(names)
    return f'for d in {folders}; do for n in {links}; do ln -sfn {target} "$d/$n" 2>/dev/null; done; done; true'


@pytest.fixture
def isolated(backend):
    if backend == "local":
        pytest.skip(NEEDS_ISOLATION)
    return backend


def test_links_at_every_host_path_are_never_followed(sandbox_factory, isolated, host):
    box = sandbox_factory()
    for target in (host["victim"], host["created"]):
        box.run(plant(target), 30)
        after = box.run("echo next command runs", 30)  # the host stages this one where the links were planted
        assert "next command runs" in after.output
        box.write_file("a.txt", "written\n")
        assert box.read_file("a.txt") == "written\n"
        assert "a.txt" in box.list_files()
        _intact(host)
    # The control folder (the wrapper, the command, uploads) is read-only inside.
    denied = box.run(f"echo x > {INSIDE_CONTROL}/command && echo WROTE", 30)
    assert "WROTE" not in denied.output


def test_hostile_shell_state_cannot_turn_file_transfers_into_link_reads(sandbox_factory, isolated, host):
    """The shell state the wrapper restores before every command (cwd, env) is the sandbox's to write: a function
    named `command`, saved there, runs inside the host's own read/list transfers and plants its link where the
    host then reads the result. The host refuses the link: the secret never comes back."""
    box = sandbox_factory()
    box.write_file("real.txt", "real\n")
    # The command is sourced by the wrapper, so it can replace the wrapper's exit trap: the saved state then carries
    # a function named `command` into every later command, the host's transfers included.
    hostile = (
        f'command() {{ if [ "$2" = cat ] && [ -n "$__t_dst" ]; then ln -sfn {host["secret"]} "$__t_dst"; '
        'else builtin command "$@"; fi; }'
    )
    box.run(
        '__t_save() { { pwd > "$__t_state/cwd"; export -p > "$__t_state/env"; '
        f"echo '{hostile}' >> \"$__t_state/env\"; }} 2>/dev/null; }}",
        30,
    )
    for operation in (lambda: box.read_file("real.txt"), lambda: box.list_files()):
        try:
            got = operation()
        except (SandboxError, OSError) as err:
            assert "TOP-SECRET" not in str(err)
        else:
            assert "TOP-SECRET" not in str(got)
    _intact(host)


def test_host_file_helpers_refuse_links_fifos_and_escapes(tmp_path, host):
    root = tmp_path / "writable"
    (root / "sub").mkdir(parents=True)
    (root / "log").symlink_to(host["secret"])
    (root / "dangling").symlink_to(host["created"])
    (root / "up").symlink_to(host["folder"], target_is_directory=True)
    os.mkfifo(root / "fifo")
    for rel in ("log", "up/secret.txt", "fifo"):
        with pytest.raises(hostfs.UnsafePathError):
            hostfs.read_bytes(root, rel)
        assert not hostfs.is_file(root, rel)
    for rel in ("../x", "/etc/passwd"):
        with pytest.raises(hostfs.UnsafePathError):
            hostfs.read_bytes(root, rel)
    hostfs.write_text(root, "dangling", "new\n")  # the link is replaced, never written through
    hostfs.write_text(root, "log", "new\n")
    with pytest.raises(hostfs.UnsafePathError):
        hostfs.write_text(root, "up/victim.txt", "overwritten\n")
    os.link(host["victim"], root / "hard")  # a hard link to a host file: replaced, not written through
    hostfs.write_text(root, "hard", "new\n")
    assert (root / "log").read_text() == "new\n" and not (root / "log").is_symlink()
    _intact(host)
    assert host["secret"].read_text() == "TOP-SECRET-3f9c\n"


def test_host_git_never_runs_what_a_sandbox_wrote_into_git_config(sandbox_factory, isolated, host, tmp_path):
    """The main agent's harness copies its sandbox's workspace for each subagent call (`Workbench.subagent_box`), and
    the copy lists files with git on the host. A command that set `core.fsmonitor` in the workspace's .git/config
    would have had that command run on the host by `git ls-files`."""
    repo = tmp_path / "repo"
    write_files(repo, {"a.txt": "a\n"})
    for args in (["init", "-q"], ["add", "-A"], ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "a"]):
        subprocess.run(["git", *args], cwd=repo, check=True)
    box = sandbox_factory(repo)
    hook = f"touch {host['created']}; echo"
    planted = box.run(f"git config core.fsmonitor '{hook}' && git config core.hooksPath /dev/null && echo SET", 30)
    assert "SET" in planted.output, planted.output
    again = sandbox_factory(Path(box.workspace))  # what subagent_box does
    assert again.read_file("a.txt") == "a\n"
    _intact(host)


# -- through the public CLI ------------------------------------------------------------------------------------------

CMAKE_PLANTER = """cmake_minimum_required(VERSION 3.10)
project(planter C)
# The configure step plants links at every path the host touches, before the host stages the next command (ctest).
execute_process(COMMAND sh -c "{plant}")
add_executable(ok ok.c)
enable_testing()
add_test(NAME ok COMMAND ok)
"""


QUERY = "build the project and run its tests"


def _exec(repo: Path, backend: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [TERMINUS, "exec", "--repo", str(repo), "--sandbox", backend, "--query", QUERY],
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, **(env or {})},
    )


@pytest.mark.skipif(shutil.which("cmake") is None, reason="cmake is not installed")
@pytest.mark.parametrize("target", ["victim", "created"])
def test_exec_on_a_repository_whose_configure_step_plants_links(tmp_path, backend, host, target, request):
    """`terminus exec` on a CMake project whose configure step replaces the command file (and every other host-touched
    name) by a link to a host file, or to a host path that does not exist: the host file keeps its bytes, no file
    appears, and the episode goes on to run the tests."""
    if backend == "local":
        pytest.skip(NEEDS_ISOLATION)
    env = {}
    if backend == "docker":
        env["DOCKER_HOST"] = request.getfixturevalue("docker_engine")
    repo = tmp_path / "repo"
    write_files(
        repo,
        {
            "CMakeLists.txt": CMAKE_PLANTER.format(plant=plant(host[target]).replace('"', '\\"')),
            "ok.c": "int main(void) { return 0; }\n",
        },
    )
    done = _exec(repo, backend, env)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "ctest" in done.stdout
    _intact(host)
