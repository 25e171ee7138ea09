"""GRPO forwards without all-pad columns.

TRL pads every episode of a generation batch to the longest (prompts on the left, completions on the right), and a
micro-batch keeps that width: a few long episodes make every forward pay for their length, and transformers hands
SDPA an explicit mask over all of it. A column that is padding in every row of a micro-batch changes nothing the
loss reads: on the right it comes after every real token (causal attention never looks ahead); on the left it is
masked out for every row, and dropping it moves every position by the same amount, which rotary embeddings do not
see (attention depends on relative positions only). Its per-token outputs are 0 (TRL's fused head scores only the
labelled positions, and pads carry no label), and 0 is what they are given back as. So each forward chunk here is cut
to the columns some row of it uses, and the chunks of the old-log-prob pass are formed of episodes of like length
(sorted, then put back in their order), so that one long episode does not widen the others.

The micro-batches of the loss forward are TRL's (shuffled and split in `_prepare_inputs`, private); sorting them
would change which episodes share a gradient-accumulation step, and with it the loss normalisation: left as they are.
"""

from __future__ import annotations

# forward arguments that carry per-column or per-row tensors of images: a batch with them is passed through whole
_MULTIMODAL = (
    "pixel_values",
    "image_grid_thw",
    "num_images",
    "pixel_attention_mask",
    "spatial_shapes",
    "num_tiles",
    "image_sizes",
    "token_type_ids",
    "mm_token_type_ids",
    "image_position_ids",
)


def used_columns(attention_mask, logits_to_keep: int) -> tuple[int, int]:
    """[left, right): the columns of `attention_mask` that some row uses, with at least one completion column
    (the last `logits_to_keep` are the completion's) and the prompt's end kept (the first completion token is scored
    from the last prompt column)."""
    used = attention_mask.any(dim=0).nonzero().flatten()
    prompt_width = attention_mask.size(1) - logits_to_keep
    if used.numel() == 0:
        return 0, attention_mask.size(1)
    left = min(int(used[0]), prompt_width - 1) if prompt_width > 0 else 0
    right = max(int(used[-1]) + 1, prompt_width + 1)
    return left, right


def _widen(values, width: int):
    """Per-token outputs of the kept completion columns, given back their full width with 0 where cut."""
    import torch.nn.functional as F

    return values if values is None or values.size(1) == width else F.pad(values, (0, width - values.size(1)))


def per_token_logps_trimmed(forward, model, input_ids, attention_mask, logits_to_keep, batch_size=None, **kwargs):
    """`forward` (TRL's `_get_per_token_logps_and_entropies`) on chunks of like-length rows, each cut to its used
    columns; the same tuple (logps, entropies, aux_loss) with the same shapes, in the same row order."""
    import torch

    if kwargs.get("compute_aux_loss") or any(kwargs.get(k) is not None for k in _MULTIMODAL):
        # a MoE's aux loss averages over every position, pads included; images index rows and columns of their own
        return forward(model, input_ids, attention_mask, logits_to_keep, batch_size=batch_size, **kwargs)
    rows = input_ids.size(0)
    batch_size = batch_size or rows
    order = torch.argsort(attention_mask.sum(dim=1), stable=True) if batch_size < rows else None
    if order is not None:
        input_ids, attention_mask = input_ids[order], attention_mask[order]
    logps, entropies = [], []
    for start in range(0, rows, batch_size):
        ids, mask = input_ids[start : start + batch_size], attention_mask[start : start + batch_size]
        left, right = used_columns(mask, logits_to_keep)
        keep = right - (ids.size(1) - logits_to_keep)  # completion columns kept
        lp, ent, _ = forward(model, ids[:, left:right], mask[:, left:right], keep, **kwargs)
        logps.append(_widen(lp, logits_to_keep))
        entropies.append(_widen(ent, logits_to_keep))
    logps = torch.cat(logps)
    entropies = torch.cat(entropies) if entropies[0] is not None else None
    if order is not None:
        back = torch.argsort(order)
        logps = logps[back]
        entropies = entropies[back] if entropies is not None else None
    return logps, entropies, None
