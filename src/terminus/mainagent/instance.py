"""The main agent inside a real-repository instance's image, where the repository lives at the image's own path
(`/app`, `/testbed`, ...) and nothing of it is on the host. The file tools need nothing special there: they go
through the sandbox (`Sandbox.read_file`, `write_file`, `list_files`), here confined to the repository folder.
The execution subagent runs in the same container, as VS Code's runs in the main agent's own terminal, so it sees
the main agent's edits."""

from __future__ import annotations

import contextlib
import shlex

from terminus.mainagent.harness import Workbench


class AtWorkdir:
    """The instance's sandbox as the agents see it: commands start in the repository folder, which prompts name, and
    file paths are relative to it and confined to it."""

    def __init__(self, box, workdir: str) -> None:
        self.box = box
        self.name = box.name
        self.workspace = box.workspace
        self.inside_workspace = workdir
        done = box.run(f"cd {shlex.quote(workdir)}", 60)  # the shell state keeps the folder for later commands
        if done.exit_code != 0:
            raise RuntimeError(f"cannot enter the repository folder {workdir}: {done.output.strip()[-300:]}")

    def run(self, command: str, timeout_s: float):
        return self.box.run(command, timeout_s)

    def read_file(self, path: str, errors: str = "strict") -> str:
        return self.box.read_file(path, errors, root=self.inside_workspace)

    def write_file(self, path: str, text: str) -> None:
        self.box.write_file(path, text, root=self.inside_workspace)

    def read_file_ends(self, path: str, keep: int) -> tuple[bytes, int]:
        return self.box.read_file_ends(path, keep, root=self.inside_workspace)

    def list_files(self, path: str = ".") -> list[str]:
        return self.box.list_files(path, root=self.inside_workspace)

    def close(self) -> None:  # the instance's sandbox belongs to whoever opened it
        pass

    def __enter__(self) -> AtWorkdir:
        return self

    def __exit__(self, *exc) -> None:
        pass


class InstanceWorkbench(Workbench):
    """Workbench whose subagent uses the (image) sandbox itself, not a fresh sandbox over a host folder."""

    def subagent_box(self):
        return contextlib.nullcontext(self.box)
