"""`local`: a plain subprocess. Process-tree containment, rlimits and a scrubbed environment; no filesystem or
network isolation. For machines without bubblewrap, and as the fastest backend for trusted code."""

from __future__ import annotations

from terminus.sandbox.process import ProcessSandbox


class LocalSandbox(ProcessSandbox):
    name = "local"

    @property
    def inside_workspace(self) -> str:  # type: ignore[override]
        return str(self.ws.repo)

    def argv(self) -> list[str]:
        return self.wrapper_argv()
