"""GRPO forwards without all-pad columns (`train.trim`): the tiny model gives the same per-token log-probs, loss and
gradients with and without trimming, on a batch padded as TRL pads a step's episodes."""

from __future__ import annotations

import pytest
import torch
from datasets import Dataset
from transformers import AutoTokenizer
from trl import GRPOConfig, GRPOTrainer

from terminus.agent.template import install
from terminus.train.grpo import grpo_trainer_class
from terminus.train.trim import used_columns


def no_reward(completions, **kwargs):
    return [0.0] * len(completions)


@pytest.fixture(scope="module")
def trainer(tiny_model, tmp_path_factory):
    # float32 throughout (TRL turns bf16 autocast on by default), so that the comparison is at float32 tolerance
    args = GRPOConfig(
        output_dir=str(tmp_path_factory.mktemp("grpo")), use_cpu=True, per_device_train_batch_size=4,
        num_generations=4, max_completion_length=64, report_to=[], beta=0.0, seed=0, bf16=False,
    )  # fmt: skip
    tokenizer = install(AutoTokenizer.from_pretrained(str(tiny_model)))
    data = Dataset.from_list([{"prompt": [{"role": "user", "content": "hi"}]}] * 4)
    return grpo_trainer_class()(
        model=str(tiny_model), reward_funcs=no_reward, args=args, train_dataset=data, processing_class=tokenizer
    )


def _batch(vocab: int, prompts: list[int], completions: list[int], prompt_width: int, completion_width: int):
    """Prompts left-padded and completions right-padded to widths beyond the longest, as TRL pads a generation
    batch and its micro-batches keep."""
    g = torch.Generator().manual_seed(0)
    rows = len(prompts)
    prompt_ids = torch.zeros(rows, prompt_width, dtype=torch.long)
    prompt_mask = torch.zeros_like(prompt_ids)
    completion_ids = torch.zeros(rows, completion_width, dtype=torch.long)
    completion_mask = torch.zeros_like(completion_ids)
    for r, (p, c) in enumerate(zip(prompts, completions, strict=True)):
        prompt_ids[r, prompt_width - p :] = torch.randint(5, vocab, (p,), generator=g)
        prompt_mask[r, prompt_width - p :] = 1
        completion_ids[r, :c] = torch.randint(5, vocab, (c,), generator=g)
        completion_mask[r, :c] = 1
    return prompt_ids, prompt_mask, completion_ids, completion_mask


def _grads(model) -> dict:
    return {n: p.grad.detach().clone() for n, p in model.named_parameters() if p.grad is not None}


def test_used_columns_keep_the_prompts_end_and_a_completion_column():
    mask = torch.tensor([[0, 0, 1, 1, 1, 0, 0], [0, 0, 0, 1, 0, 0, 0]])
    assert used_columns(mask, logits_to_keep=3) == (2, 5)
    assert used_columns(torch.tensor([[0, 0, 1, 0, 0]]), logits_to_keep=2) == (2, 4)  # a fully masked completion


@pytest.mark.parametrize("batch_size", [None, 2])
def test_trimmed_forwards_give_the_same_logps_loss_and_gradients(trainer, batch_size):
    model = trainer.model
    vocab = model.config.vocab_size
    prompt_ids, prompt_mask, completion_ids, completion_mask = _batch(vocab, [12, 20, 7, 15], [9, 30, 4, 17], 40, 64)
    input_ids = torch.cat([prompt_ids, completion_ids], dim=1)
    attention = torch.cat([prompt_mask, completion_mask], dim=1)
    width = completion_ids.size(1)

    def logps(trimmed: bool):
        plain = GRPOTrainer._get_per_token_logps_and_entropies.__get__(trainer)
        forward = trainer._get_per_token_logps_and_entropies if trimmed else plain
        model.zero_grad(set_to_none=True)
        lp, ent, _ = forward(model, input_ids, attention, width, batch_size=batch_size, compute_entropy=True)
        loss = -(lp * completion_mask).sum() / completion_mask.sum()
        loss.backward()
        return lp.detach(), ent.detach(), _grads(model)

    full, trimmed = logps(False), logps(True)
    assert full[0].shape == trimmed[0].shape == (4, width)
    mask = completion_mask.bool()
    torch.testing.assert_close(trimmed[0][mask], full[0][mask], rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(trimmed[1][mask], full[1][mask], rtol=1e-5, atol=1e-5)
    assert not trimmed[0][~mask].any()  # cut positions come back as the 0 TRL's fused head gives unlabelled ones
    assert full[2].keys() == trimmed[2].keys() and full[2]
    for name, grad in full[2].items():
        torch.testing.assert_close(trimmed[2][name], grad, rtol=1e-4, atol=1e-6, msg=name)

    # the loss forward as TRL runs it on a micro-batch (`_compute_loss`), through the override and around it
    inputs = {
        "prompt_ids": prompt_ids,
        "prompt_mask": prompt_mask,
        "completion_ids": completion_ids,
        "completion_mask": completion_mask,
        "advantages": torch.tensor([1.0, -0.5, 0.25, -0.75]),
        "num_items_in_batch": completion_mask.sum(),
    }
    losses = []
    for trimmed_forward in (False, True):
        model.zero_grad(set_to_none=True)
        if trimmed_forward:
            loss = trainer._compute_loss(model, inputs)
        else:
            plain = GRPOTrainer._get_per_token_logps_and_entropies.__get__(trainer)
            trainer._get_per_token_logps_and_entropies = plain  # this instance only, restored below
            try:
                loss = trainer._compute_loss(model, inputs)
            finally:
                del trainer._get_per_token_logps_and_entropies
        loss.backward()
        losses.append((loss.detach(), _grads(model)))
    torch.testing.assert_close(losses[1][0], losses[0][0], rtol=1e-5, atol=1e-6)
    for name, grad in losses[0][1].items():
        torch.testing.assert_close(losses[1][1][name], grad, rtol=1e-4, atol=1e-6, msg=name)


def test_a_micro_batch_forward_reads_only_the_used_columns(trainer, monkeypatch):
    """The forward the model runs sees the micro-batch's used width, not the step's padded one."""
    model = trainer.model
    prompt_ids, prompt_mask, completion_ids, completion_mask = _batch(model.config.vocab_size, [5, 8], [6, 3], 30, 50)
    widths = []
    original = model.forward
    monkeypatch.setattr(model, "forward", lambda *a, **k: widths.append(k["input_ids"].size(1)) or original(*a, **k))
    input_ids = torch.cat([prompt_ids, completion_ids], dim=1)
    attention = torch.cat([prompt_mask, completion_mask], dim=1)
    with torch.no_grad():
        trainer._get_per_token_logps_and_entropies(model, input_ids, attention, 50)
    assert widths == [8 + 6]
