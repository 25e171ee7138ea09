"""One run's settings, resolved once where a run starts (each CLI command, GRPO's main, the MCP server) and handed
down as arguments: the schema-filled config as typed stage sections (`RunSpec`), and where the run's commands
execute (`SandboxSpec`). Nothing travels through environment variables; the layers below take what they need as
required arguments, so each default lives once, in configs/schema/config.schema.yaml.

Imports `config`, `errors` and the sandbox's own spec (`sandbox.spec`, which imports nothing above it) only, so
every room may import it."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from terminus.config import load_config, run_dir
from terminus.sandbox.spec import SandboxSpec

POLICIES = ("scripted", "openai", "transformers", "vllm")  # what `terminus.models.make_policy` builds
LOCAL_POLICIES = ("transformers", "vllm")  # a model on this machine: its GPU, not a price per token


@dataclass(frozen=True)
class TasksSection:
    synthetic: dict
    registry: dict
    manifests: list
    swe: dict
    paraphrase: dict | None
    splits: dict


@dataclass(frozen=True)
class CollectSection:
    policy: str
    model: str | None
    base_url: str | None
    api_key_env: str | None
    concurrency: int
    max_turns: int
    request_timeout: float
    max_retries: int
    splits: list


@dataclass(frozen=True)
class ModelSection:
    base: str
    sft_recipe: str
    grpo_recipe: str
    summary_max_new_tokens: int
    summary_policy: str
    summary_train_tasks: int
    augment: int
    decision_copies: int
    tiny: dict


@dataclass(frozen=True)
class JudgeSection:
    rubric: str
    scorer: str
    prompts: str
    endpoint: dict | None
    serve: str | None
    group: bool
    llm_stages: list
    concurrency: int
    request_timeout: float
    max_retries: int
    output_chars: int
    reply_tokens: int
    reasoning_tokens: int
    max_tokens: int | None
    validity_llm_pairs: int | None


@dataclass(frozen=True)
class EvalSection:
    split: str
    benchmarks: list
    swe: dict
    main_agents: list
    subagents: list
    seeds: list
    concurrency: int
    request_timeout: float
    max_retries: int
    max_tasks: int | None
    tokenizer: str
    case_study_task: str | None
    judge: dict


@dataclass
class RunSpec:
    """A loaded experiment config: `config` (the schema-filled dict, for code that takes it whole), its stage
    sections typed, and `sandbox`. Built once per entry point (`load_run`)."""

    config: dict
    sandbox: SandboxSpec = field(default_factory=SandboxSpec)

    @property
    def run(self) -> str:
        return self.config["run"]

    @property
    def seed(self) -> int:
        return self.config["seed"]

    @property
    def run_dir(self) -> Path:
        return run_dir(self.config)

    # Read from the dict each time (a command's flags update it: endpoint limits, eval's model folders). A key the
    # schema gains and its section lacks fails here, in tests/test_config_paths.py, not silently.
    @property
    def tasks(self) -> TasksSection:
        return TasksSection(**self.config["tasks"])

    @property
    def collect(self) -> CollectSection:
        return CollectSection(**self.config["collect"])

    @property
    def model(self) -> ModelSection:
        return ModelSection(**self.config["model"])

    @property
    def judge(self) -> JudgeSection:
        return JudgeSection(**self.config["judge"])

    @property
    def eval(self) -> EvalSection:
        return EvalSection(**self.config["eval"])


SECTIONS = {
    "tasks": TasksSection,
    "collect": CollectSection,
    "model": ModelSection,
    "judge": JudgeSection,
    "eval": EvalSection,
}


def load_run(path: Path | str | None = None, sandbox: str | None = None) -> RunSpec:
    """The config at `path`, validated and filled (`load_config`), and its sandbox (`sandbox`, a --sandbox flag,
    over the config's backend)."""
    config = load_config(path)
    return RunSpec(config, SandboxSpec(sandbox or config.get("sandbox"), config.get("sandbox_image")))
