"""The main agent inside a real-repository instance's image, where the repository lives at the image's own path
(`/app`, `/testbed`, ...) and nothing of it is on the host. Its tools then go through the sandbox: files are read
with `cat` and written back whole (base64, so no quoting can bite), and the execution subagent runs in the same
container, as VS Code's runs in the main agent's own terminal, so it sees the main agent's edits."""

from __future__ import annotations

import base64
import contextlib
import shlex

from terminus.mainagent.harness import MainAgentResult, Workbench, truncate


class AtWorkdir:
    """The instance's sandbox as the agents see it: commands start in the repository folder, which prompts name."""

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

    def close(self) -> None:  # the instance's sandbox belongs to whoever opened it
        pass

    def __enter__(self) -> AtWorkdir:
        return self

    def __exit__(self, *exc) -> None:
        pass


class InstanceWorkbench(Workbench):
    """Workbench whose file tools and subagent use the (image) sandbox itself, not a host folder."""

    def _path(self, relative: str) -> str | None:
        root = self.box.inside_workspace.rstrip("/")
        path = relative if relative.startswith("/") else f"{root}/{relative}"
        parts = path.split("/")
        return None if ".." in parts or not (path == root or path.startswith(root + "/")) else path

    def read(self, relative: str) -> str:
        path = self._path(relative)
        if path is None:
            return f"error: {relative} is outside the repository"
        quoted = shlex.quote(path)
        done = self.box.run(
            f"if [ -d {quoted} ]; then find {quoted} -maxdepth 2 -not -path '*/.*' | sort | head -300; "
            f"else cat -- {quoted}; fi",
            60,
        )
        if done.exit_code != 0:
            return f"error: no file {relative}"
        return truncate(done.output)

    def edit(self, args: dict, result: MainAgentResult) -> str:
        relative = str(args.get("path", ""))
        path = self._path(relative)
        if path is None:
            return f"error: no file {relative}"
        done = self.box.run(f"base64 -w0 -- {shlex.quote(path)}", 60)
        if done.exit_code != 0 or done.truncated:
            return f"error: no file {relative}" if done.exit_code else f"error: {relative} is too large to edit here"
        text = base64.b64decode(done.output.strip()).decode(errors="replace")
        old, new = str(args.get("old", "")), str(args.get("new", ""))
        if text.count(old) != 1:
            return "error: `old` must occur exactly once in the file"
        data = base64.b64encode(text.replace(old, new, 1).encode()).decode()
        written = self.box.run(f"printf %s {data} | base64 -d > {shlex.quote(path)}", 60)
        if written.exit_code != 0:
            return f"error: cannot write {relative}: {written.output.strip()[-200:]}"
        result.edits.append({"path": relative, "old": old, "new": new})
        return "ok"

    def subagent_box(self):
        return contextlib.nullcontext(self.box)
