"""The building blocks of the typed configs: strict scalar types, the shared definitions (the one home of a notion
several keys share: the turn limit, the request timeout, the retry count, an endpoint's API and reasoning flag),
`Section` (frozen, unknown keys refused), `filled` (a model as the dict a file fills to) and `field_default`."""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    StrictFloat,
    StrictInt,
    StrictStr,
    WithJsonSchema,
    model_validator,
)


def _positive(value: float) -> float:
    if value <= 0:
        raise ValueError("must be above 0")
    return value


# A number as written (120 stays an int, 1.5 a float: the config hash is of the dict as filled), above zero.
PositiveNumber = Annotated[
    StrictInt | StrictFloat, AfterValidator(_positive), WithJsonSchema({"type": "number", "exclusiveMinimum": 0})
]
Share = Annotated[StrictInt | StrictFloat, Field(ge=0), WithJsonSchema({"type": "number", "minimum": 0})]


def Count(minimum: int | None = None) -> Any:  # a type with a minimum
    return Annotated[StrictInt, Field(ge=minimum)] if minimum is not None else StrictInt


# The shared definitions (the one home of each notion's default).
TURN_LIMIT = 10
TURN_LIMIT_HELP = (
    "Turn limit per episode. The one home of the subagent's turn limit: eval's `tool_call_limit` and the commands "
    "that run without a config (`exec`, `run`, `mcp`, `tasks validate`, `training-summary`) default to it."
)
REQUEST_TIMEOUT = 120
REQUEST_TIMEOUT_HELP = (
    "Seconds an endpoint may take to answer one request before it is retried (openai policy, LLM judge, LLM main "
    "agent). A call ends within request_timeout x (max_retries + 1) plus the waits between tries."
)
MAX_RETRIES = 3
MAX_RETRIES_HELP = (
    "Retries per endpoint call: 429 (honouring Retry-After), 5xx, timeouts, dropped connections and unusable "
    "replies (malformed JSON, HTML, no choices). Counted in each record's policy_retries."
)
API_HELP = (
    "The API the provider serves the model through: chat (/chat/completions) or responses (/responses; some models "
    "are served only there, e.g. OpenAI's codex models). vLLM's server serves both."
)
REASONING_HELP = (
    "A reasoning model: chat sends max_completion_tokens instead of max_tokens, which such models refuse, and no "
    "request sends a temperature."
)
MAX_NEW_TOKENS = 256
MAX_NEW_TOKENS_HELP = "Tokens per subagent turn where nothing else sets them (eval cells, GRPO, the held-out check)."
SWE_TIMEOUT_S = 1800  # grading's test-run timeout (eval.swe.timeout_s; `terminus swe grade`, `swe validate`)
NAME_PATTERN = r"^[A-Za-z0-9.-]+(_[A-Za-z0-9.-]+)*$"  # a cell-name part: no `__`, which joins the parts
RUN_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.-]*$"

Api = Literal["chat", "responses"]
Split = Literal["train", "val", "test"]
TurnLimit = Annotated[StrictInt, Field(ge=2)]


def turn_limit(description: str = TURN_LIMIT_HELP) -> Any:
    return Field(TURN_LIMIT, description=description)


def request_timeout() -> Any:
    return Field(REQUEST_TIMEOUT, description=REQUEST_TIMEOUT_HELP)


def max_retries() -> Any:
    return Field(MAX_RETRIES, description=MAX_RETRIES_HELP)


class Section(BaseModel):
    """A part of a config: frozen (a loaded config is never changed; derive one with `model_copy(update=...)`),
    unknown keys refused. `OMIT_UNSET`: keys the filled dict leaves out when the file does (those without a default:
    an agent's model, an override), so that the dict, and the config hash, stay what the file says."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)
    OMIT_UNSET: ClassVar[frozenset[str]] = frozenset()

    @model_validator(mode="before")
    @classmethod
    def _no_null_for_omitted(cls, data: Any) -> Any:
        # A key without a default takes no null either: absent is how a file leaves it unset.
        if isinstance(data, dict):
            for key in cls.OMIT_UNSET:
                alias = cls.model_fields[key].alias or key
                if alias in data and data[alias] is None:
                    raise ValueError(f"{alias} may not be null (leave it out instead)")
        return data


class Endpoint(Section):
    """An OpenAI-compatible endpoint: {base_url, model, api_key_env, api, reasoning}."""

    OMIT_UNSET = frozenset({"base_url", "model", "api_key_env"})
    base_url: StrictStr | None = Field(None, description="The endpoint's URL (…/v1).")
    model: StrictStr | None = Field(None, description="The model it serves.")
    api_key_env: StrictStr | None = Field(
        None, description="The environment variable holding its API key (checked before anything runs)."
    )
    api: Api = Field("chat", description=API_HELP)
    reasoning: StrictBool = Field(False, description=REASONING_HELP)


class PlainEndpoint(Endpoint):
    """An endpoint whose `api` and `reasoning` stay out of the filled dict unless written (the paraphraser's, the
    eval judge's: their defaults were never filled in, and the config hash is of the filled dict)."""

    OMIT_UNSET = Endpoint.OMIT_UNSET | {"api", "reasoning"}


def filled(node: Any) -> Any:
    """A model as the plain dict a config file fills to (every default in, `OMIT_UNSET` keys only where written;
    keys by their names in the file): what `load_config` returns and the config hash is taken of."""
    if isinstance(node, BaseModel):
        out = {}
        for name, info in type(node).model_fields.items():
            if name in getattr(node, "OMIT_UNSET", ()) and name not in node.model_fields_set:
                continue
            out[info.alias or name] = filled(getattr(node, name))
        return out
    if isinstance(node, list | tuple):
        return [filled(v) for v in node]
    if isinstance(node, dict):
        return {k: filled(v) for k, v in node.items()}
    return node


def field_default(model: type[BaseModel], name: str) -> Any:
    """A field's default (`field_default(Collect, "max_turns")`): where a flag of a command that may run without a
    config takes its default, so that each default lives once, here."""
    return model.model_fields[name].get_default(call_default_factory=True)
