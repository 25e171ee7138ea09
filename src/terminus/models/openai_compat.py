"""`openai`: any OpenAI-compatible endpoint (`vllm serve`, API providers), bounded in time, with clear errors.

Two APIs, as providers serve their models (`api`): `chat` (`/chat/completions`) and `responses` (`/responses`,
the only one some models are served through, e.g. OpenAI's codex models). `reasoning` models take
`max_completion_tokens` (chat) instead of `max_tokens`, which they refuse, and no `temperature`; the Responses API
always takes `max_output_tokens`. Both read the project's chat messages and tools and give back one reply type
(`content`, `tool_calls` as chat writes them, `usage` as prompt/completion tokens), so callers never see which.

Retries are the `openai` SDK's own (`max_retries`, `timeout`): it retries timeouts, dropped connections, 408,
409, 429 and 5xx with exponential backoff and honours `Retry-After`. A reply the SDK accepts but that is not a
chat completion (malformed JSON, an HTML page from a proxy, no `choices`) is retried here the same way, out of
the same budget: one call makes at most `max_retries + 1` requests, so it ends within
`timeout_s * (max_retries + 1)` plus the waits between them. The retries a call took are returned (`retries`)
or carried by the `PolicyError` that ends it, so the trajectory counts them either way.
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time

from terminus.errors import TerminusError
from terminus.timing import model_view

log = logging.getLogger(__name__)

OPENAI_URL = "https://api.openai.com/v1"
DEFAULT_TIMEOUT_S = 120.0
DEFAULT_MAX_RETRIES = 3  # as the CLI flags and the config keys
APIS = ("chat", "responses")
MAX_BACKOFF_S = 8.0


class PolicyError(TerminusError, RuntimeError):
    """The policy cannot answer: endpoint unreachable, key missing or rejected, model unknown, replies unusable."""

    def __init__(self, message: str, retries: int = 0) -> None:
        super().__init__(" ".join(message.split()))  # one line, whatever the server put in its error text
        self.retries = retries


class MissingKeyError(TerminusError, ValueError):
    """A config names an environment variable for an API key, and the variable is not set."""


class MalformedReply(ValueError):
    """A 2xx reply that is not a usable chat completion."""


def api_key_from_env(variable: str | None, who: str) -> str | None:
    """The key in `variable` (None when no variable is named), checked before anything runs."""
    if not variable:
        return None
    key = os.environ.get(variable)
    if not key:
        raise MissingKeyError(f"{who}: the environment variable {variable} is not set (it should hold the API key)")
    return key


def endpoint_limits(spec: dict) -> dict:
    """OpenAIPolicy's keyword arguments from a config spec's endpoint keys where set: `request_timeout`,
    `max_retries`, and how the provider serves the model, `api` (chat | responses) and `reasoning`."""
    limits = {}
    if spec.get("request_timeout") is not None:
        limits["timeout_s"] = float(spec["request_timeout"])
    if spec.get("max_retries") is not None:
        limits["max_retries"] = int(spec["max_retries"])
    if spec.get("api") is not None:
        limits["api"] = str(spec["api"])
    if spec.get("reasoning") is not None:
        limits["reasoning"] = bool(spec["reasoning"])
    return limits


def _check_json(response) -> None:
    if isinstance(response, str | bytes):  # the SDK hands back non-JSON bodies (an HTML error page) as text
        head = (response if isinstance(response, str) else response.decode(errors="replace")).strip()[:60]
        raise MalformedReply(f"a non-JSON reply ({head!r})")


def _message_of(response) -> dict:
    """The assistant message of a parsed completion, or MalformedReply saying what is wrong with it."""
    _check_json(response)
    choices = getattr(response, "choices", None)
    if not choices:
        raise MalformedReply("a reply without choices")
    message = getattr(choices[0], "message", None)
    if message is None:
        raise MalformedReply("a choice without a message")
    reply = {"content": message.content or ""}
    if message.tool_calls:
        reply["tool_calls"] = [
            {"id": c.id, "type": "function", "function": {"name": c.function.name, "arguments": c.function.arguments}}
            for c in message.tool_calls
        ]
    if getattr(response, "usage", None):
        reply["usage"] = {
            "prompt_tokens": response.usage.prompt_tokens,
            "completion_tokens": response.usage.completion_tokens,
            "cached_tokens": cached_tokens(response.usage, "prompt_tokens_details"),
        }
    return reply


def cached_tokens(usage, details: str) -> int | None:
    """Prompt tokens the provider read from its prompt cache (billed at the cache price): OpenAI's
    `{prompt,input}_tokens_details.cached_tokens`, or Anthropic's `cache_read_input_tokens` on its compatible
    endpoint; None where the reply does not say."""
    found = getattr(getattr(usage, details, None), "cached_tokens", None)
    if found is None:
        found = getattr(usage, "cache_read_input_tokens", None)
    return int(found) if isinstance(found, int) else None


def _responses_input(messages: list[dict]) -> list[dict]:
    """Chat messages as Responses input items: an assistant's tool calls become `function_call` items after its
    text, a tool message a `function_call_output` item with the call's id."""
    items = []
    for m in messages:
        role = m.get("role")
        if role == "tool":
            items.append(
                {"type": "function_call_output", "call_id": m.get("tool_call_id") or "", "output": m["content"]}
            )
            continue
        if m.get("content") or role != "assistant":
            items.append({"role": role, "content": m.get("content") or ""})
        for call in m.get("tool_calls") or []:
            fn = call["function"]
            items.append(
                {"type": "function_call", "call_id": call["id"], "name": fn["name"], "arguments": fn["arguments"]}
            )
    return items


def _responses_tools(tools: list[dict]) -> list[dict]:
    """Chat tools (`{type: function, function: {name, description, parameters}}`) as the Responses API's flat
    function tools. `strict: false`: the provider would otherwise require every property and no other."""
    return [{"type": "function", **t["function"], "strict": False} for t in tools]


def _responses_tool_choice(choice: str | dict) -> str | dict:
    if isinstance(choice, dict):  # chat names a function as {type, function: {name}}, Responses as {type, name}
        return {"type": "function", "name": choice["function"]["name"]}
    return choice


def _message_of_response(response) -> dict:
    """The assistant message of a parsed Responses reply (its `message` and `function_call` output items;
    reasoning items left out), or MalformedReply saying what is wrong with it."""
    _check_json(response)
    output = getattr(response, "output", None)
    if output is None:
        raise MalformedReply("a reply without output")
    if not output and getattr(response, "error", None):
        raise MalformedReply(f"a failed response ({response.error})")
    texts, calls = [], []
    for item in output:
        kind = getattr(item, "type", None)
        if kind == "message":
            texts += [part.text for part in item.content or [] if getattr(part, "type", None) == "output_text"]
        elif kind == "function_call":
            calls.append(
                {"id": item.call_id, "type": "function", "function": {"name": item.name, "arguments": item.arguments}}
            )
    reply = {"content": "".join(texts)}
    if calls:
        reply["tool_calls"] = calls
    if getattr(response, "usage", None):
        reply["usage"] = {
            "prompt_tokens": response.usage.input_tokens,
            "completion_tokens": response.usage.output_tokens,
            "cached_tokens": cached_tokens(response.usage, "input_tokens_details"),
        }
    return reply


class OpenAIPolicy:
    def __init__(
        self,
        model: str,
        base_url: str | None = None,
        api_key: str | None = None,
        temperature: float = 0.0,
        max_tokens: int = 1024,
        max_retries: int = DEFAULT_MAX_RETRIES,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        backoff_s: float = 0.5,
        tool_choice: str | dict | None = None,
        seed: int | None = None,
        api: str = "chat",
        reasoning: bool = False,
    ) -> None:
        import openai

        if max_retries < 0 or timeout_s <= 0:
            raise PolicyError(f"max_retries must be >= 0 and the request timeout > 0 (got {max_retries}, {timeout_s})")
        if api not in APIS:
            raise PolicyError(f"endpoint api must be one of {', '.join(APIS)} (got {api!r})")
        self.api, self.reasoning = api, reasoning
        self.name = f"openai:{model}"
        self.model = model
        self.base_url = base_url or os.environ.get("OPENAI_BASE_URL") or OPENAI_URL
        key = api_key or os.environ.get("OPENAI_API_KEY")
        if not key:
            if self.base_url.startswith(OPENAI_URL):
                raise PolicyError(
                    f"no API key for {self.base_url}: set OPENAI_API_KEY, or put the key in a "
                    "variable and pass its name with --api-key-env NAME"
                )
            key = "EMPTY"  # local servers such as `vllm serve` accept any key
        self.temperature, self.max_tokens = temperature, max_tokens
        self.max_retries, self.timeout_s, self.backoff_s = max_retries, timeout_s, backoff_s
        self._seen = threading.local()  # the retry number of this thread's latest request (the SDK's header)
        http = openai.DefaultHttpxClient(event_hooks={"request": [self._on_request]})
        self.client = openai.OpenAI(
            base_url=self.base_url, api_key=key, max_retries=max_retries, timeout=timeout_s, http_client=http
        )
        self.tool_choice = tool_choice  # "auto" (the server's default), "required" or one named function
        self.seed = seed  # sampling seed, for servers that honour it (vLLM does)
        self._errors = openai

    def _on_request(self, request) -> None:
        self._seen.retry = int(request.headers.get("x-stainless-retry-count") or 0)

    def _gave_up(self, what: str, used: int) -> PolicyError:
        """A call that failed after `used` retries: what happened, and what to check."""
        fix = f"check that {self.base_url} is up and serves {self.model!r}, or raise --request-timeout/--max-retries"
        return PolicyError(f"endpoint {self.base_url} {what}; {fix}", used)

    def request(self, messages: list[dict], tools: list[dict], tool_choice: str | None = None) -> dict:
        """The request body for this endpoint's API: what the provider takes for this kind of model. `tool_choice`
        (the loop's "none" on its last turn) overrides the policy's own for this call."""
        viewed = model_view(messages)
        if self.api == "responses":
            # stateless: each call carries the whole conversation, nothing is stored at the provider
            request = {"model": self.model, "input": _responses_input(viewed), "store": False}
            request["max_output_tokens"] = self.max_tokens
        else:
            request = {"model": self.model, "messages": viewed}
            request["max_completion_tokens" if self.reasoning else "max_tokens"] = self.max_tokens
        if not self.reasoning:  # reasoning models refuse a sampling temperature
            request["temperature"] = self.temperature
        if self.seed is not None and self.api == "chat":
            request["seed"] = self.seed
        elif self.seed is not None:  # not an OpenAI Responses field (the SDK has no argument): vLLM takes it
            request["extra_body"] = {"seed": self.seed}
        if tools:
            request["tools"] = tools if self.api == "chat" else _responses_tools(tools)
            if choice := tool_choice or self.tool_choice:
                request["tool_choice"] = choice if self.api == "chat" else _responses_tool_choice(choice)
        return request

    def respond(self, messages: list[dict], tools: list[dict], tool_choice: str | None = None) -> dict:
        errors = self._errors
        request = self.request(messages, tools, tool_choice)
        parse = _message_of_response if self.api == "responses" else _message_of
        used = 0  # retries this call has spent, the SDK's and ours
        while True:
            self._seen.retry = 0
            client = self.client.with_options(max_retries=self.max_retries - used)
            try:
                endpoint = client.responses if self.api == "responses" else client.chat.completions
                raw = endpoint.with_raw_response.create(**request)
                used += raw.retries_taken
                reply = parse(raw.parse())
            except (MalformedReply, json.JSONDecodeError, UnicodeDecodeError) as err:
                problem = str(err) if isinstance(err, MalformedReply) else f"malformed JSON ({err})"
            except errors.APITimeoutError as err:
                used += self._seen.retry
                raise self._gave_up(f"did not answer within {self.timeout_s:g} s ({used} retries)", used) from err
            except errors.APIConnectionError as err:
                used += self._seen.retry
                raise self._gave_up(f"is unreachable ({used} retries): {err}", used) from err
            except errors.AuthenticationError as err:
                raise PolicyError(f"endpoint {self.base_url} rejected the API key: {err}", used) from err
            except errors.NotFoundError as err:
                raise PolicyError(
                    f"endpoint {self.base_url} does not serve model {self.model!r}: {err}", used
                ) from err
            except errors.APIStatusError as err:
                used += self._seen.retry
                what = f"failed with HTTP {err.status_code} after {used} retries: {err.message}"
                raise self._gave_up(what, used) from err
            else:
                reply["retries"] = used
                return reply
            if used >= self.max_retries:
                message = (
                    f"endpoint {self.base_url} sent {problem} after {used} retries; it is not an "
                    f"OpenAI-compatible {self.api} endpoint, or a proxy in front of it failed"
                )
                raise PolicyError(message, used)
            delay = min(self.backoff_s * 2**used, MAX_BACKOFF_S)
            used += 1
            log.warning("%s sent %s; retry %d of %d in %.1f s", self.base_url, problem, used, self.max_retries, delay)
            time.sleep(delay)
