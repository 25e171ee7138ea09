"""The weights GRPO pushes to its colocated vLLM sampler when it trains a LoRA: merged out of place.

TRL 1.16 syncs a PEFT model by merging the adapter into the base weights in place (`merge_adapter`), reading them,
and unmerging (`unmerge_adapter`). In bf16 each round trip rounds twice, `(W + d) - d != W`, so the frozen base
walks away from the model it started as, and what vLLM samples from after many syncs (a sync a step) carries only
part of what the adapter learned: replayed on CPU at lr 1e-6 on one 2560x9728 weight, ~11% after 100 syncs.
`merged_weights` computes what vLLM gets as `W + scaling * B @ A` in fp32, cast once to the base dtype, into a new
tensor: the trainer's base weights are never written (tests/train/test_weight_sync.py replays 200 syncs both ways).
"""

from __future__ import annotations

from collections.abc import Iterator

from terminus.train import TrainingInputError


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
