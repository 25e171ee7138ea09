"""What GRPO's colocated vLLM sampler needs: the weights a LoRA run pushes to it, merged out of place
(`merged_weights`, `install_exact_sync`), and a memory share that holds the step's episodes (`kv_plan`,
`check_kv_plan`).

TRL 1.16 syncs a PEFT model by merging the adapter into the base weights in place (`merge_adapter`), reading them,
and unmerging (`unmerge_adapter`). In bf16 each round trip rounds twice, `(W + d) - d != W`, so the frozen base
walks away from the model it started as, and what vLLM samples from after many syncs (a sync a step) carries only
part of what the adapter learned (issue 43: at lr 1e-6 on one 2560x9728 weight, ~11% after 100 syncs).
`merged_weights` computes what vLLM gets as `W + scaling * B @ A` in fp32, cast once to the base dtype, into a new
tensor: the trainer's base weights are never written (tests/train/test_colocate.py replays 200 syncs both ways).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from dataclasses import dataclass

from terminus.train import TrainingInputError

log = logging.getLogger(__name__)


def _merged(layer, adapters: list[str], attr: str):
    """`attr` ("weight" or "bias") of the LoRA layer's base with its adapters added, in fp32, cast once."""
    from peft.utils.other import transpose

    base = getattr(layer.get_base_layer(), attr)
    out = base.detach().float()
    for name in adapters:
        lora_a, lora_b, scaling = layer.lora_A[name], layer.lora_B[name], layer.scaling[name]
        if attr == "weight":
            delta = transpose(lora_b.weight.float() @ lora_a.weight.float(), layer.fan_in_fan_out) * scaling
        else:
            delta = lora_b.bias.float() * scaling
        out = out + delta
    return out.to(base.dtype)


def merged_weights(model) -> Iterator[tuple[str, object]]:
    """The tensors vLLM loads, under the names it loads them by (as TRL's own sync names them), one at a time: a
    LoRA layer's base weight (and bias, with `lora_bias`) merged with its active adapters out of place, every other
    parameter as it is. Plain LoRA on linear layers only: DoRA and LoRA on embeddings or convolutions, which TRL
    would merge in place, are refused rather than synced some other way."""
    from peft.tuners.lora import Linear, LoraLayer

    merged: dict[int, tuple] = {}  # id of a base parameter -> (LoRA layer, its active adapters, "weight"/"bias")
    for module in model.modules():
        if not isinstance(module, LoraLayer):
            continue
        adapters = [a for a in module.active_adapters if a in module.lora_A]
        if not adapters:
            continue
        if not isinstance(module, Linear) or any(a in module.lora_variant for a in adapters):
            raise TrainingInputError(
                f"GRPO's weight sync merges plain LoRA on linear layers, not {type(module).__name__} "
                f"(or DoRA): set use_dora false and target linear modules only"
            )
        if module.merged:  # merged in place already: the base would be counted twice
            raise TrainingInputError("GRPO's weight sync found a LoRA adapter merged into its base weights")
        base = module.get_base_layer()
        merged[id(base.weight)] = (module, adapters, "weight")
        if any(module.lora_bias[a] for a in adapters):
            merged[id(base.bias)] = (module, adapters, "bias")
    for name, param in model.named_parameters():
        # the names TRL gives vLLM (`VLLMGeneration._iter_named_params`): PEFT's wrapping removed, adapters skipped
        name = name.removeprefix("base_model.model.").replace(".base_layer", "")
        if model.prefix in name or "original_module" in name:
            continue
        name = name.replace("_checkpoint_wrapped_module.", "").replace("modules_to_save.default.", "")
        entry = merged.get(id(param))
        yield name, param.data if entry is None else _merged(*entry)


def install_exact_sync(generation) -> None:
    """Make TRL's vLLM engine (`trainer.vllm_generation`) sync a PEFT model by `merged_weights`. TRL gives no
    public hook for what a sync pushes: `VLLMGeneration.sync_weights` (which wakes a sleeping engine, loads the
    tensors and resets the prefix cache, all kept) reads them from its private `_iter_named_params`, replaced here
    on this one instance. A full fine-tune (the smoke recipes) keeps TRL's path, which reads the weights as they are.
    """
    from accelerate.utils import is_peft_model

    model = generation.model
    if not is_peft_model(model):
        return
    dist = generation._dist  # TRL private, as above: its detection of a sharded model
    if dist.is_fsdp or dist.is_zero3:  # merged_weights reads whole tensors; TRL gathers shards in its own path
        raise TrainingInputError("GRPO with LoRA and vLLM syncs an unsharded model: run it without FSDP or ZeRO-3")
    generation._iter_named_params = lambda: merged_weights(model)


# What vLLM holds beside its weights and KV cache, allowed for rather than measured here: activations of its
# profiling batch (TRL fixes max_num_batched_tokens at 4,096), the sampler's logits and its CUDA graphs.
VLLM_OVERHEAD_BYTES = 2 * 2**30


def kv_bytes_per_token(config, dtype_bytes: int = 2) -> int:
    """Key and value, every layer, every KV head: 2 x 36 x 8 x 128 x 2 = 147,456 bytes for Qwen3-4B in bf16."""
    head_dim = getattr(config, "head_dim", None) or config.hidden_size // config.num_attention_heads
    return 2 * config.num_hidden_layers * config.num_key_value_heads * head_dim * dtype_bytes


@dataclass(frozen=True)
class KVPlan:
    """vLLM's share of the GPU against the step's episodes: what is left of the share after its copy of the
    weights and `VLLM_OVERHEAD_BYTES` is KV cache, `cache_tokens` tokens of it; the step runs `episodes` in
    lockstep (`terminus.collect.lockstep`), each up to `context` tokens (vLLM's max model length)."""

    share: float
    gpu_bytes: int
    weight_bytes: int
    per_token: int
    episodes: int
    context: int

    @property
    def cache_tokens(self) -> int:
        free = self.share * self.gpu_bytes - self.weight_bytes - VLLM_OVERHEAD_BYTES
        return max(0, int(free // self.per_token))

    @property
    def full_episodes(self) -> int:
        """Episodes at their full context the cache holds at once."""
        return self.cache_tokens // self.context

    @property
    def tokens_each(self) -> int:
        """The longest every one of the step's episodes can be with all of them held at once."""
        return self.cache_tokens // self.episodes

    def describe(self) -> str:
        return (
            f"vllm_gpu_memory_utilization {self.share} of {self.gpu_bytes / 1e9:.1f} GB leaves "
            f"{self.cache_tokens:,} tokens of KV cache ({self.per_token:,} bytes a token) after the weights "
            f"({self.weight_bytes / 1e9:.1f} GB): {self.full_episodes} of the step's {self.episodes} episodes at "
            f"their full {self.context:,} tokens, or all of them at {self.tokens_each:,} tokens each"
        )


def kv_plan(training_args, model, gpu_bytes: int) -> KVPlan:
    """The plan of a GRPO recipe (TRL's arguments, parsed) for `model` (as loaded, before any LoRA: vLLM loads the
    same weights in the same dtype) on a GPU of `gpu_bytes`. The episodes are one rank's share of TRL's generation
    batch (per_device_train_batch_size x steps_per_generation; the batch over world_size under DDP, where each rank's
    engine runs its own): one rollout call runs them all."""
    params = list(model.parameters())  # tied embeddings once, as vLLM holds them
    config = model.config
    return KVPlan(
        share=training_args.vllm_gpu_memory_utilization,
        gpu_bytes=gpu_bytes,
        weight_bytes=sum(p.numel() * p.element_size() for p in params),
        per_token=kv_bytes_per_token(config, params[0].element_size()),
        episodes=training_args.generation_batch_size // training_args.world_size,
        context=training_args.vllm_max_model_length or config.max_position_embeddings,
    )


def check_kv_plan(plan: KVPlan) -> None:
    """Refuse a share whose cache cannot hold one episode at its full context (vLLM would refuse it too, but only
    after minutes of loading); warn when it cannot hold the whole step's episodes at theirs: vLLM then queues and
    preempts sequences, and the rollouts are slower, not different in kind."""
    if plan.full_episodes < 1:
        raise TrainingInputError(
            f"{plan.describe()}: not one episode fits; raise vllm_gpu_memory_utilization or lower "
            "vllm_max_model_length"
        )
    if plan.full_episodes < plan.episodes:
        log.warning("%s; longer steps wait on vLLM's cache", plan.describe())
    else:
        log.info("%s", plan.describe())
