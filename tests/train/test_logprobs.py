"""vLLM's logprobs of the sampled tokens land on the model's own tokens of the episode, in order, for TRL's
importance-sampling correction; tool output, injected turns and tokens that were not sampled as rendered get none."""

from __future__ import annotations

from transformers import AutoTokenizer

from terminus.train.grpo import align_logprobs, episode_tokens

CALL = {
    "type": "function",
    "function": {"name": "run_in_terminal", "arguments": '{"command": "ls", "timeout_ms": 1000}'},
}
MESSAGES = [
    {"role": "system", "content": "sys"},
    {"role": "user", "content": "run the tests"},
    {"role": "assistant", "content": "", "tool_calls": [CALL]},
    {"role": "tool", "content": "TOOL OUTPUT LINE\n[exit code 0]"},
    {"role": "assistant", "content": "<final_answer>\nCommand: ls\nSummary: done.\n</final_answer>"},
]


def _segments(tokens: dict) -> list[list[int]]:
    """The runs of model tokens (env_mask 1), as the generator would have sampled them."""
    runs, current = [], []
    for token, mask in zip(tokens["completion_ids"], tokens["env_mask"], strict=True):
        if mask:
            current.append(token)
        elif current:
            runs.append(current)
            current = []
    return [*runs, current] if current else runs


def test_logprobs_land_on_the_sampled_tokens_only(tiny_model):
    tokenizer = AutoTokenizer.from_pretrained(tiny_model)
    tokens = episode_tokens(tokenizer, MESSAGES, None)
    runs = _segments(tokens)
    assert len(runs) == 2  # two assistant turns
    generated = [{"token_ids": run, "logprobs": [-(i + 1) / 10] * len(run)} for i, run in enumerate(runs)]
    aligned = align_logprobs(tokens["completion_ids"], tokens["env_mask"], generated)
    assert len(aligned) == len(tokens["completion_ids"])
    for value, mask in zip(aligned, tokens["env_mask"], strict=True):
        assert (value is not None) == bool(mask)
    assert sorted({v for v in aligned if v is not None}) == [-0.2, -0.1]


def test_a_token_rendered_differently_from_how_it_was_sampled_gets_no_correction(tiny_model):
    tokenizer = AutoTokenizer.from_pretrained(tiny_model)
    tokens = episode_tokens(tokenizer, MESSAGES, None)
    first, second = _segments(tokens)
    changed = [*first[:2], first[2] + 1, *first[3:]]  # the third sampled token differs from the rendered one
    generated = [{"token_ids": changed, "logprobs": [-0.5] * len(changed)}, {"token_ids": second, "logprobs": None}]
    aligned = align_logprobs(tokens["completion_ids"], tokens["env_mask"], generated)
    scored = [v for v in aligned if v is not None]
    assert scored == [-0.5, -0.5]  # up to the divergence; after it, and for a reply without logprobs, none
