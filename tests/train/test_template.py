"""One chat template at every stage and both scales (Qwen3's own with generation markers), and GRPO episodes kept
as the token ids they were sampled as (`EpisodeTokens`): the mask, the end of a completion, the budget."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
import trl
from transformers import AutoTokenizer

from terminus.agent.template import CHAT_KWARGS, TemplateError, chat_template, install
from terminus.agent.terminal import TERMINAL_TOOL
from terminus.models.generate import EpisodeTokens, PromptTooLong
from terminus.train.grpo import ratio_spread
from terminus.train.sft import check_assistant_mask

QWEN3 = (Path(trl.__file__).parent / "chat_templates" / "qwen3.jinja").read_text()  # as Qwen/Qwen3-4B ships it
CALL = '<tool_call>\n{"name": "run_in_terminal", "arguments": {"command": "ls", "timeout_ms": 1000}}\n</tool_call>'
ANSWER = "<final_answer>\nCommand: ls\nSummary: two files.\n</final_answer>"
START = [{"role": "system", "content": "You run commands."}, {"role": "user", "content": "List the files."}]
EPISODE = [
    *START,
    {"role": "assistant", "content": CALL},
    {"role": "tool", "content": "a.py b.py\n[exit code 0]"},
    {"role": "assistant", "content": ANSWER},
]


@pytest.fixture(scope="module")
def qwen_tok():
    """Qwen3-4B's tokenizer (Qwen's BPE, its added tokens at their ids) with its own chat template."""
    from terminus.train.arch import load_spec, qwen_tokenizer

    tokenizer = qwen_tokenizer(load_spec())
    tokenizer.chat_template = QWEN3
    return tokenizer


def _render(tokenizer, template: str, messages: list[dict], **kwargs) -> str:
    return tokenizer.apply_chat_template(
        messages, tools=[TERMINAL_TOOL], tokenize=False, chat_template=template, **kwargs
    )


@pytest.mark.parametrize("thinking", [False, True])
def test_prompts_render_exactly_as_qwen3s_own_template(qwen_tok, thinking):
    """What a model reads at each turn's start is Qwen3's prompt, byte for byte; only the masks and earlier turns'
    empty think blocks differ."""
    for upto in (2, 4):
        ours = _render(qwen_tok, chat_template(), EPISODE[:upto], add_generation_prompt=True, enable_thinking=thinking)
        theirs = _render(qwen_tok, QWEN3, EPISODE[:upto], add_generation_prompt=True, enable_thinking=thinking)
        if upto == 2:
            assert ours == theirs
        else:  # Qwen3 drops the empty think block of the earlier reply: the one thing our template keeps
            assert ours.replace("<think>\n\n</think>\n\n" + CALL, CALL) == theirs


def test_qwen3s_own_template_marks_nothing_and_sft_refuses_it_in_one_line(qwen_tok):
    rendered = qwen_tok.apply_chat_template(
        EPISODE, tools=[TERMINAL_TOOL], tokenize=True, return_dict=True, return_assistant_tokens_mask=True
    )
    assert not any(rendered["assistant_masks"])  # the paper-scale bug: TRL's loss would be 0
    with pytest.raises(TemplateError, match=r"other than configs/agent/chat_template.jinja .*loss would be 0"):
        check_assistant_mask(qwen_tok, EPISODE)


def test_installed_template_marks_exactly_what_a_model_samples(qwen_tok):
    tokenizer = install(_copy(qwen_tok))
    check_assistant_mask(tokenizer, EPISODE)
    rendered = tokenizer.apply_chat_template(
        EPISODE, tools=[TERMINAL_TOOL], tokenize=True, return_dict=True, return_assistant_tokens_mask=True
    )
    ids, mask = rendered["input_ids"], rendered["assistant_masks"]
    trained = tokenizer.decode([t for t, m in zip(ids, mask, strict=True) if m])
    assert trained == f"{CALL}<|im_end|>{ANSWER}<|im_end|>"  # no prompt, no empty think block, no tool output


def _copy(tokenizer):
    import copy

    return copy.deepcopy(tokenizer)


def test_the_tiny_model_reads_the_template_qwen3_4b_is_trained_with(tiny_model):
    assert AutoTokenizer.from_pretrained(tiny_model).chat_template == chat_template()


# EpisodeTokens: token in, token out


def _tokens(tokenizer, **limits) -> EpisodeTokens:
    return EpisodeTokens(tokenizer, max_new_tokens=limits.pop("max_new_tokens", 32), **limits)


def _spelled(tokenizer, text: str) -> list[int]:
    """`text` sampled one character a token: what a model may sample, never what re-tokenising it gives."""
    return [tokenizer.convert_tokens_to_ids(tokenizer.tokenize(ch)[0]) for ch in text]


def _episode(tokenizer, episode: EpisodeTokens, replies: list[list[int]]) -> list[list[int]]:
    """Drive `episode` through EPISODE with `replies` as the sampled token ids; returns each turn's prompt."""
    prompts = [episode.prompt(EPISODE[:2], [TERMINAL_TOOL])]
    episode.reply(replies[0], [-0.5] * len(replies[0]))
    prompts.append(episode.prompt(EPISODE[:4], []))  # a last turn offers no tools: the episode keeps its own
    episode.reply(replies[1], None)
    return prompts


def test_the_trained_completion_is_the_sampled_token_ids_in_their_own_context(qwen_tok):
    tokenizer = install(_copy(qwen_tok))
    eos = tokenizer.eos_token_id
    first = [*_spelled(tokenizer, CALL), eos]  # never the tokenizer's own split of the text
    second = tokenizer(ANSWER, add_special_tokens=False)["input_ids"] + [eos]
    assert first[:-1] != tokenizer(CALL, add_special_tokens=False)["input_ids"]
    episode = _tokens(tokenizer)
    prompts = _episode(tokenizer, episode, [first, second])
    sample = episode.sample(None)
    completion, mask = sample["completion_ids"], sample["env_mask"]
    assert [t for t, m in zip(completion, mask, strict=True) if m] == first + second
    # each prompt is the sequence so far: the second holds the first reply's sampled ids, not a re-rendering
    assert prompts[1][: len(prompts[0]) + len(first)] == prompts[0] + first
    assert sample["prompt_ids"] == prompts[0]
    assert prompts[1] == prompts[0] + completion[: len(prompts[1]) - len(prompts[0])]
    # the tools block stayed: the text is the template's rendering of the conversation with tools throughout
    text = tokenizer.decode(prompts[1])
    assert text == _render(tokenizer, chat_template(), EPISODE[:4], add_generation_prompt=True, **CHAT_KWARGS)
    # the episode ends on its last sampled <|im_end|>: TRL counts it terminated
    assert completion[-1] == eos and not sample["truncated"]
    scored = [lp for lp, m in zip(sample["logprobs"], mask, strict=True) if m]
    assert scored == [-0.5] * len(first) + [None] * len(second)


def test_a_reply_cut_at_the_token_limit_gets_no_unsampled_end_of_turn(qwen_tok):
    tokenizer = install(_copy(qwen_tok))
    eos = tokenizer.eos_token_id
    cut = tokenizer(CALL, add_special_tokens=False)["input_ids"][:5]  # hit max_new_tokens: no <|im_end|>
    episode = _tokens(tokenizer)
    _episode(tokenizer, episode, [cut, cut])
    sample = episode.sample(None)
    completion, mask = sample["completion_ids"], sample["env_mask"]
    # the <|im_end|> closing the cut turn is context (mask 0), never trained as if sampled
    at = completion.index(eos)
    assert at == len(cut) and mask[at] == 0 and mask[:at] == [1] * len(cut)
    assert sample["truncated"]  # the last reply was cut: a real truncation stays truncated


def test_an_episode_cut_by_max_completion_length_is_truncated(qwen_tok):
    tokenizer = install(_copy(qwen_tok))
    eos = tokenizer.eos_token_id
    reply = tokenizer(CALL, add_special_tokens=False)["input_ids"] + [eos]
    episode = _tokens(tokenizer)
    _episode(tokenizer, episode, [reply, reply])
    sample = episode.sample(len(reply))  # cut right after the first reply's <|im_end|>
    assert sample["truncated"] and len(sample["completion_ids"]) == len(reply) - 1


def test_the_loop_is_asked_for_the_answer_before_the_budget_runs_out(qwen_tok):
    tokenizer = install(_copy(qwen_tok))
    reply = tokenizer(CALL, add_special_tokens=False)["input_ids"] + [tokenizer.eos_token_id]
    roomy = _tokens(tokenizer, max_completion_length=10_000, observation_tokens=100)
    tight = _tokens(tokenizer, max_completion_length=len(reply) + 200, observation_tokens=100)
    for episode in (roomy, tight):
        episode.prompt(EPISODE[:2], [TERMINAL_TOOL])
        episode.reply(reply, None)
    assert not roomy.must_answer(EPISODE[:4]) and tight.must_answer(EPISODE[:4])


def test_a_prompt_over_the_engines_context_ends_the_episode(qwen_tok):
    tokenizer = install(_copy(qwen_tok))
    episode = _tokens(tokenizer, max_model_len=50)
    with pytest.raises(PromptTooLong, match="max_model_len is 50"):
        episode.prompt(EPISODE[:2], [TERMINAL_TOOL])


def test_a_template_that_is_not_prefix_preserving_is_named(qwen_tok):
    tokenizer = _copy(qwen_tok)  # Qwen3's own: drops the empty think block of an earlier reply
    episode = _tokens(tokenizer)
    with pytest.raises(TemplateError, match=r"other than configs/agent/chat_template\.jinja"):
        _episode(tokenizer, episode, [[*_spelled(tokenizer, CALL), tokenizer.eos_token_id]] * 2)


def test_ratio_spread_reports_std_and_the_cut_share():
    ratio = torch.tensor([[1.0, 3.0, 0.5, 9.0]])
    mask = torch.tensor([[1, 1, 1, 0]])
    spread = ratio_spread(ratio, mask, "token_truncate", None, 3.0)
    assert spread["cut_fraction"] == pytest.approx(1 / 3)
    assert spread["std"] == pytest.approx(torch.tensor([1.0, 3.0, 0.5]).std().item())
    masked = ratio_spread(torch.tensor([[1.0, 0.0, 0.0]]), torch.ones(1, 3), "token_mask", None, 3.0)
    assert masked["cut_fraction"] == pytest.approx(2 / 3)
