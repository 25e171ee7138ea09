"""`openai`: any OpenAI-compatible chat endpoint (`vllm serve`, API providers), with retries and clear errors."""

from __future__ import annotations

import logging
import os
import time

log = logging.getLogger(__name__)

OPENAI_URL = "https://api.openai.com/v1"


class PolicyError(RuntimeError):
    """The policy cannot answer: endpoint unreachable, key missing or rejected, model unknown."""


class MissingKeyError(ValueError):
    """A config names an environment variable for an API key, and the variable is not set."""


def api_key_from_env(variable: str | None, who: str) -> str | None:
    """The key in `variable` (None when no variable is named), checked before anything runs."""
    if not variable:
        return None
    key = os.environ.get(variable)
    if not key:
        raise MissingKeyError(f"{who}: the environment variable {variable} is not set (it should hold the API key)")
    return key


class OpenAIPolicy:
    def __init__(
        self,
        model: str,
        base_url: str | None = None,
        api_key: str | None = None,
        temperature: float = 0.0,
        max_tokens: int = 1024,
        max_retries: int = 4,
        timeout_s: float = 120.0,
        backoff_s: float = 1.0,
        tool_choice: str | dict | None = None,
        seed: int | None = None,
    ) -> None:
        import openai

        self.name = f"openai:{model}"
        self.model = model
        self.base_url = base_url or os.environ.get("OPENAI_BASE_URL") or OPENAI_URL
        key = api_key or os.environ.get("OPENAI_API_KEY")
        if not key:
            if self.base_url.startswith(OPENAI_URL):
                raise PolicyError(f"no API key for {self.base_url}: set OPENAI_API_KEY or pass --api-key")
            key = "EMPTY"  # local servers such as `vllm serve` accept any key
        self.temperature, self.max_tokens = temperature, max_tokens
        self.max_retries, self.backoff_s = max_retries, backoff_s
        self.tool_choice = tool_choice  # "auto" (the server's default), "required" or one named function
        self.seed = seed  # sampling seed, for servers that honour it (vLLM does)
        self.client = openai.OpenAI(base_url=self.base_url, api_key=key, max_retries=0, timeout=timeout_s)
        self._errors = openai

    def respond(self, messages: list[dict], tools: list[dict]) -> dict:
        errors = self._errors
        retries = 0
        while True:
            try:
                request = {"model": self.model, "messages": messages, "temperature": self.temperature,
                           "max_tokens": self.max_tokens}  # fmt: skip
                if self.seed is not None:
                    request["seed"] = self.seed
                if tools:
                    request["tools"] = tools
                    if self.tool_choice:
                        request["tool_choice"] = self.tool_choice
                response = self.client.chat.completions.create(**request)
                break
            except (errors.RateLimitError, errors.APITimeoutError, errors.APIConnectionError,
                    errors.InternalServerError) as err:  # fmt: skip
                if retries >= self.max_retries:
                    if isinstance(err, errors.APIConnectionError):
                        raise PolicyError(f"endpoint {self.base_url} is unreachable: {err}") from err
                    raise PolicyError(f"endpoint {self.base_url} failed after {retries} retries: {err}") from err
                retries += 1
                delay = self.backoff_s * 2 ** (retries - 1)
                log.warning("%s: %s; retry %d in %.1f s", self.base_url, type(err).__name__, retries, delay)
                time.sleep(delay)
            except errors.AuthenticationError as err:
                raise PolicyError(f"endpoint {self.base_url} rejected the API key: {err}") from err
            except errors.NotFoundError as err:
                raise PolicyError(f"endpoint {self.base_url} does not serve model {self.model!r}: {err}") from err
        choice = response.choices[0].message
        reply = {"content": choice.content or "", "retries": retries}
        if choice.tool_calls:
            reply["tool_calls"] = [
                {
                    "id": c.id,
                    "type": "function",
                    "function": {"name": c.function.name, "arguments": c.function.arguments},
                }
                for c in choice.tool_calls
            ]
        if response.usage:
            reply["usage"] = {"prompt_tokens": response.usage.prompt_tokens,
                              "completion_tokens": response.usage.completion_tokens}  # fmt: skip
        return reply
