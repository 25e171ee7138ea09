"""GRPO's colocated vLLM (`train.colocate`). The weight sync of a LoRA: 200 syncs with small adapter updates
between, read through TRL's own sync entry (`VLLMGeneration._iter_named_params`, what `sync_weights` loads into
vLLM), once as TRL 1.16 does it (merge into the bf16 base in place, read, unmerge) and once with ours installed. No
vLLM engine is started: what is tested is the tensors a sync would hand it. vLLM's memory share against the step's
episodes: the recipes parsed as `terminus grpo` parses them, the models as they load."""

from __future__ import annotations

import pytest
import torch

SYNCS = 200


def lora_model():
    """A tiny Qwen3 in bf16 with a LoRA on every linear layer of its blocks, as the paper recipe targets them; the
    adapter in fp32, as PEFT keeps it under a bf16 base (`autocast_adapter_dtype`)."""
    from peft import LoraConfig, get_peft_model
    from transformers import Qwen3Config, Qwen3ForCausalLM

    torch.manual_seed(0)
    config = Qwen3Config(vocab_size=128, hidden_size=64, intermediate_size=192, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2, head_dim=16)  # fmt: skip
    model = Qwen3ForCausalLM(config).to(torch.bfloat16)
    targets = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]
    lora = LoraConfig(r=8, lora_alpha=16, lora_dropout=0.0, target_modules=targets, task_type="CAUSAL_LM")
    return get_peft_model(model, lora)


def trl_generation(model):
    """TRL's vLLM engine object around `model`, without the engine: its sync reads the weights through
    `_iter_named_params`, which needs only the model and TRL's view of the (unsharded) accelerator."""
    from accelerate import Accelerator
    from trl.distributed import DistributedBackend
    from trl.generation.vllm_generation import VLLMGeneration

    generation = object.__new__(VLLMGeneration)
    generation.model = model
    generation.accelerator = Accelerator(cpu=True)
    generation._dist = DistributedBackend(generation.accelerator)
    return generation


def lora_layers(model) -> dict:
    from peft.tuners.lora import Linear

    return {name.removeprefix("base_model.model."): m for name, m in model.named_modules() if isinstance(m, Linear)}


def fresh_merge(base: torch.Tensor, layer) -> torch.Tensor:
    """The sampler's weight from the untouched base: W + scaling * B @ A in fp32, cast once."""
    a, b = layer.lora_A["default"].weight.float(), layer.lora_B["default"].weight.float()
    return (base.float() + layer.scaling["default"] * (b @ a)).to(base.dtype)


def replay(exact: bool):
    """200 syncs of one model, the adapter nudged between them as small optimizer steps would; returns the
    base weights before and after, the last sync's pushed tensors, and the layers."""
    model = lora_model()
    generation = trl_generation(model)
    if exact:
        from terminus.train.colocate import install_exact_sync

        install_exact_sync(generation)
    layers = lora_layers(model)
    before = {name: layer.get_base_layer().weight.detach().clone() for name, layer in layers.items()}
    gen = torch.Generator().manual_seed(1)
    pushed = {}
    for _ in range(SYNCS):
        with torch.no_grad():
            for layer in layers.values():  # a LoRA step at lr ~1e-5 moves A and B by about this much
                for p in (layer.lora_A["default"].weight, layer.lora_B["default"].weight):
                    p.add_(torch.randn(p.shape, generator=gen) * 2e-4)
        pushed = {name: t.clone() for name, t in generation._iter_named_params()}
    after = {name: layer.get_base_layer().weight.detach() for name, layer in layers.items()}
    return before, after, pushed, layers


def ulp(t: torch.Tensor) -> torch.Tensor:
    """One bf16 unit in the last place of each value: the most a single cast can round by is half of it."""
    exponent = torch.frexp(t.float().abs().clamp_min(2.0**-126)).exponent
    return torch.ldexp(torch.ones_like(t, dtype=torch.float32), exponent - 8)


@pytest.mark.parametrize("exact", [True, False], ids=["ours", "trl_in_place"])
def test_synced_weights_are_one_fresh_merge(exact: bool) -> None:
    before, after, pushed, layers = replay(exact)
    names = {f"{name}.weight" for name in layers}
    assert names <= pushed.keys() and not any("lora_" in n for n in pushed)
    gaps = []
    for name, layer in layers.items():
        want = fresh_merge(before[name], layer)
        got = pushed[f"{name}.weight"]
        assert got.dtype == torch.bfloat16
        gaps.append(((got.float() - want.float()).abs() / ulp(want)).max().item())
    base_kept = all(torch.equal(before[n], after[n]) for n in layers)
    if exact:
        assert base_kept, "the sync wrote the trainer's base weights"
        assert max(gaps) <= 0.5 + 1e-6, f"pushed weights {max(gaps)} ulp from one fresh fp32 merge cast once"
    else:  # TRL 1.16's in-place merge and unmerge: the test above is one that can fail
        assert not base_kept
        assert max(gaps) > 1


def test_refuses_what_it_cannot_merge_exactly() -> None:
    from peft import LoraConfig, get_peft_model
    from transformers import Qwen3Config, Qwen3ForCausalLM

    from terminus.train import TrainingInputError
    from terminus.train.colocate import install_exact_sync

    config = Qwen3Config(vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=1,
                         num_attention_heads=2, num_key_value_heads=1, head_dim=16)  # fmt: skip
    model = get_peft_model(
        Qwen3ForCausalLM(config), LoraConfig(r=4, target_modules=["q_proj"], use_dora=True, task_type="CAUSAL_LM")
    )
    generation = trl_generation(model)
    install_exact_sync(generation)
    with pytest.raises(TrainingInputError, match="DoRA"):
        list(generation._iter_named_params())


def recipe_args(recipe: str, *extra: str):
    from terminus.train.grpo import parse

    return parse(["--config", f"configs/grpo/{recipe}.yaml", "--use_cpu", "true", "--bf16", "false", *extra])[1]


def test_kv_plan_of_the_tiny_recipe_warns_and_refuses(tiny_model, caplog, monkeypatch) -> None:
    """The tiny recipe with vLLM colocated, its model as it loads (float32): a GPU that holds the step's episodes at
    their full context passes quietly, one that holds fewer warns, one that holds none refuses."""
    import logging

    from transformers import AutoModelForCausalLM

    from terminus.config import ROOT
    from terminus.train import TrainingInputError
    from terminus.train.colocate import VLLM_OVERHEAD_BYTES, check_kv_plan, kv_plan

    monkeypatch.chdir(ROOT)
    args = recipe_args("tiny", "--use_vllm", "true", "--vllm_max_model_length", "4096")
    model = AutoModelForCausalLM.from_pretrained(tiny_model, dtype=torch.float32)
    config = model.config
    per_token = 2 * config.num_hidden_layers * config.num_key_value_heads * config.head_dim * 4
    weights = sum(p.numel() for p in model.parameters()) * 4
    step = args.per_device_train_batch_size * args.gradient_accumulation_steps  # TRL's generation batch
    assert step == 4

    def plan(tokens: int):
        share = args.vllm_gpu_memory_utilization
        return kv_plan(args, model, int((weights + VLLM_OVERHEAD_BYTES + tokens * per_token) / share) + 1)

    whole = plan(step * 4096)
    assert (whole.per_token, whole.episodes, whole.context) == (per_token, step, 4096)
    assert whole.full_episodes == step
    with caplog.at_level(logging.INFO, logger="terminus.train.colocate"):
        check_kv_plan(whole)
        check_kv_plan(plan(2 * 4096 + 100))
    assert [r.levelname for r in caplog.records] == ["INFO", "WARNING"]
    assert "2 of the step's 4 episodes at their full 4,096 tokens" in caplog.records[1].getMessage()
    with pytest.raises(TrainingInputError, match="not one episode fits"):
        check_kv_plan(plan(4000))


def test_kv_plan_of_the_paper_recipe_is_its_comment(monkeypatch) -> None:
    """configs/grpo/qwen3-4b.yaml's arithmetic for its share, on Qwen3-4B's shapes (no weights: the meta device)."""
    from transformers import Qwen3ForCausalLM

    from terminus.config import ROOT
    from terminus.train.arch import load_spec, qwen3_config
    from terminus.train.colocate import kv_plan

    monkeypatch.chdir(ROOT)
    args = recipe_args("qwen3-4b", "--gradient_accumulation_steps", "16")  # the comment's one-GPU figures
    spec = load_spec()
    with torch.device("meta"):
        model = Qwen3ForCausalLM(qwen3_config(spec)).to(torch.bfloat16)
    h100 = kv_plan(args, model, 81_559 * 2**20)
    assert h100.weight_bytes == 2 * spec["parameters"]
    assert (h100.per_token, h100.episodes, h100.context) == (147_456, 32, 40_960)
    assert (h100.cache_tokens, h100.full_episodes, h100.tokens_each) == (133_869, 3, 4_183)
    h200 = kv_plan(args, model, 143_771 * 2**20)
    assert (h200.cache_tokens, h200.full_episodes, h200.tokens_each) == (288_708, 7, 9_022)
    # as written, under DDP over 4 GPUs (model.grpo_gpus): each rank's engine runs its 2 x 4 = 8 episodes
    rank = kv_plan(recipe_args("qwen3-4b"), model, 81_559 * 2**20)
    assert (rank.episodes, rank.cache_tokens, rank.tokens_each) == (8, 133_869, 16_733)
    rank = kv_plan(recipe_args("qwen3-4b"), model, 143_771 * 2**20)
    assert (rank.episodes, rank.cache_tokens, rank.tokens_each) == (8, 288_708, 36_088)
