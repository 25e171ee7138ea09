"""The experiment config as frozen, typed models: each key's type, default and description live here once, and
configs/schema/config.schema.json is generated from them (`terminus config schema`; tests/test_config_paths.py
checks that the committed file is what they generate). `terminus.config` reads a file, validates it against
`Config` and fills it (`filled`): the dict the config hash is taken of, unchanged from the old YAML schema's.

A loaded config is never changed: derive another with `model_copy(update=...)`.

Imports pydantic and nothing of the project, so every room may import it."""

from terminus.settings.base import (
    MAX_NEW_TOKENS,
    MAX_RETRIES,
    REQUEST_TIMEOUT,
    SWE_TIMEOUT_S,
    TURN_LIMIT,
    Endpoint,
    PlainEndpoint,
    Section,
    field_default,
    filled,
)
from terminus.settings.evaluation import Eval, EvalJudge, EvalSwe, MainAgent, Subagent
from terminus.settings.experiment import (
    Collect,
    Config,
    Judge,
    Model,
    Registry,
    Splits,
    SweTasks,
    Synthetic,
    Tasks,
    TinyModel,
)

__all__ = [
    "MAX_NEW_TOKENS",
    "MAX_RETRIES",
    "REQUEST_TIMEOUT",
    "SWE_TIMEOUT_S",
    "TURN_LIMIT",
    "Collect",
    "Config",
    "Endpoint",
    "Eval",
    "EvalJudge",
    "EvalSwe",
    "Judge",
    "MainAgent",
    "Model",
    "PlainEndpoint",
    "Registry",
    "Section",
    "Splits",
    "Subagent",
    "SweTasks",
    "Synthetic",
    "Tasks",
    "TinyModel",
    "field_default",
    "filled",
    "schema",
]


def schema() -> dict:
    """The JSON schema of an experiment config, generated from `Config` (what configs/schema/config.schema.json
    holds)."""
    out = {"$schema": "https://json-schema.org/draft/2020-12/schema"}
    return out | Config.model_json_schema(by_alias=True)
