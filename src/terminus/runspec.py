"""One run's settings, resolved once where a run starts (each CLI command, GRPO's main, the MCP server) and handed
down as arguments: the filled config, frozen and typed (`RunSpec.cfg`, `terminus.settings.Config`), and where the
run's commands execute (`SandboxSpec`). Nothing travels through environment variables; the layers below take what
they need as required arguments, so each default lives once, in terminus.settings.

Imports `config`, `settings`, `errors` and the sandbox's own spec (`sandbox.spec`, which imports nothing above it)
only, so every room may import it."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import yaml

from terminus.config import load_config, run_dir, validate
from terminus.sandbox.spec import SandboxSpec
from terminus.settings import Collect, Config, Eval, Judge, Model, Tasks, filled

POLICIES = ("scripted", "openai", "transformers", "vllm")  # what `terminus.models.make_policy` builds
LOCAL_POLICIES = ("transformers", "vllm")  # a model on this machine: its GPU, not a price per token


@dataclass(frozen=True)
class RunSpec:
    """A loaded experiment config: `cfg` (frozen and typed: `spec.cfg.collect.max_turns`), `config` (the same
    config as the filled dict, for code that takes it whole: the hash, the stamp, the written copy; read it, never
    change it) and `sandbox`. Built once per entry point (`load_run`); a command that overrides a setting derives
    a new spec (`with_cfg`), never changes this one."""

    config: dict
    sandbox: SandboxSpec = field(default_factory=SandboxSpec)
    cfg: Config = field(default=None, compare=False)  # type: ignore[assignment] - made from `config` when not given

    def __post_init__(self) -> None:
        if self.cfg is None:
            object.__setattr__(self, "cfg", typed(self.config))

    @property
    def run(self) -> str:
        return self.cfg.run

    @property
    def seed(self) -> int:
        return self.cfg.seed

    @property
    def run_dir(self) -> Path:
        return run_dir(self.config)

    @property
    def tasks(self) -> Tasks:
        return self.cfg.tasks

    @property
    def collect(self) -> Collect:
        return self.cfg.collect

    @property
    def model(self) -> Model:
        return self.cfg.model

    @property
    def judge(self) -> Judge:
        return self.cfg.judge

    @property
    def eval(self) -> Eval:
        return self.cfg.eval

    def resolved_yaml(self) -> str:
        """The resolved config as YAML (`terminus config show`, and the copy each stage writes beside its output),
        its top-level keys as in a config file; the private `_path` and `_hash` named in a comment instead."""
        public = {k: v for k, v in self.config.items() if not k.startswith("_")}
        head = f"# resolved from {self.config.get('_path')} (config_hash {self.config.get('_hash')})\n"
        return head + yaml.safe_dump(public, sort_keys=False, allow_unicode=True)

    def with_cfg(self, cfg: Config) -> RunSpec:
        """This run with `cfg` instead: a command's flag over a setting (endpoint limits), a value derived from it
        (eval's model folders made absolute), as `spec.cfg.model_copy(update=...)`. The dict is filled again from
        it; its private keys are kept, the hash too: the stamp names the config file the run was started from, as it
        did when flags were written into the loaded dict."""
        private = {k: v for k, v in self.config.items() if k.startswith("_")}
        return RunSpec(filled(cfg) | private, self.sandbox, cfg)


def typed(config: dict) -> Config:
    """The frozen, typed form of a loaded config dict (its private `_path`, `_hash`, `_base` aside)."""
    return validate({k: v for k, v in config.items() if not k.startswith("_")}, config.get("_path") or "a config")


def load_run(
    path: Path | str | None = None,
    sandbox: str | None = None,
    sets: list[str] | tuple[str, ...] = (),
    pull: str | None = None,
) -> RunSpec:
    """The config at `path`, with `sets` (`--set KEY=VALUE`) merged in before it is validated and filled
    (`load_config`), and its sandbox (`sandbox`, a --sandbox flag, over the config's backend; `pull`, a --pull
    flag, over its `sandbox_pull`)."""
    config = load_config(path, sets)
    backend, image = sandbox or config.get("sandbox"), config.get("sandbox_image")
    return RunSpec(config, SandboxSpec(backend, image, pull=pull or config["sandbox_pull"]))
