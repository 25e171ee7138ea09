"""Batched rollouts: episodes in lockstep give, under greedy decoding, the episodes that one-at-a-time generation
gives (padding and masks change nothing the model sees), and every turn's calls go out as one batch."""

from __future__ import annotations

from functools import partial
from pathlib import Path

import pytest

from builders import synthetic_corpus
from terminus.collect.lockstep import run_lockstep
from terminus.collect.runner import run_episode
from terminus.models.generate import TransformersGenerator
from terminus.models.local import TransformersPolicy, load_transformers
from terminus.sandbox.bwrap import bwrap_path
from terminus.sandbox.spec import SandboxSpec
from terminus.tasks.record import load_tasks


@pytest.fixture(scope="module")
def small_corpus(tmp_path_factory) -> Path:
    synthetic = {"languages": ["python"], "repos_per_language": 2, "variants": ["pass", "fail"]}
    return synthetic_corpus(tmp_path_factory.mktemp("lockstep"), synthetic)


def _comparable(traj) -> dict:
    record = traj.to_dict()
    for turn in record["turns"]:
        turn["duration_s"] = 0.0
    record["messages"] = [
        {**m, "content": _strip_timing(m["content"])} if m["role"] == "tool" else m for m in record["messages"]
    ]
    return {k: record[k] for k in ("messages", "termination", "final_answer", "prompt_tokens", "completion_tokens")}


def _strip_timing(text: str) -> str:
    import re

    return re.sub(r"\d+\.\d+s", "Xs", text)


@pytest.mark.skipif(bwrap_path() is None, reason="bwrap missing: the prompt must name the same workspace each time")
def test_batched_and_sequential_rollouts_are_token_identical(small_corpus, tiny_model):
    tasks = load_tasks(small_corpus)[:4]
    model, tokenizer = load_transformers(str(tiny_model))
    sequential = [
        run_episode(
            t,
            small_corpus,
            TransformersPolicy(str(tiny_model), max_new_tokens=24),
            max_turns=4,
            sandbox=SandboxSpec("bwrap"),
        )
        for t in tasks
    ]
    generator = TransformersGenerator(model, tokenizer, max_new_tokens=24)
    run = run_lockstep(
        [partial(run_episode, t, small_corpus, max_turns=4, sandbox=SandboxSpec("bwrap")) for t in tasks], generator
    )
    assert [_comparable(t) for t in run.trajectories] == [_comparable(t) for t in sequential]
    # every turn went out as one batch of the episodes still running
    assert run.batch_sizes[0] == len(tasks)
    assert sum(run.batch_sizes) == sum(1 for t in sequential for m in t.messages if m["role"] == "assistant")
    assert all(p.generated and p.generated[0]["token_ids"] for p in run.policies)


def test_a_generator_failure_crashes_the_episodes_instead_of_hanging(small_corpus):
    class Broken:
        name = "broken"

        def generate(self, conversations, tools):
            raise RuntimeError("CUDA out of memory")

    tasks = load_tasks(small_corpus)[:3]
    run = run_lockstep(
        [partial(run_episode, t, small_corpus, max_turns=10, sandbox=SandboxSpec("local")) for t in tasks], Broken()
    )
    assert [t.termination for t in run.trajectories] == ["crash"] * 3
    assert all("CUDA out of memory" in t.error for t in run.trajectories)


def _episode_tokens(tokenizer, **limits):
    from terminus.models.generate import EpisodeTokens

    return partial(EpisodeTokens, tokenizer, max_new_tokens=24, **limits)


def test_grpo_rollouts_train_on_the_token_ids_they_sampled(small_corpus, tiny_model):
    """With `tokens` (GRPO), each episode is one sequence: its model tokens are exactly the generator's sampled ids,
    in order, and each turn was generated from the sequence so far."""
    tasks = load_tasks(small_corpus)[:3]
    model, tokenizer = load_transformers(str(tiny_model))
    generator = TransformersGenerator(model, tokenizer, max_new_tokens=24, temperature=1.0)
    seen: list[list[int]] = []
    generate = generator.generate

    def recording(conversations, tools, prompts=None):
        seen.extend(prompts)
        return generate(conversations, tools, prompts=prompts)

    generator.generate = recording
    episodes = [partial(run_episode, t, small_corpus, max_turns=3, sandbox=SandboxSpec("local")) for t in tasks]
    run = run_lockstep(episodes, generator, tokens=_episode_tokens(tokenizer))
    for policy in run.policies:
        sample = policy.tokens.sample(None)
        sampled = [t for g in policy.generated for t in g["token_ids"]]
        trained = [t for t, m in zip(sample["completion_ids"], sample["env_mask"], strict=True) if m]
        assert sampled and trained == sampled
        assert sample["prompt_ids"] in seen  # the first prompt, as the template renders it
    assert len(seen) == sum(run.batch_sizes)
    # every later prompt was an episode's own sequence so far, never a re-rendering of its text
    assert all(any(seq[: len(p)] == p for seq in _sequences(run)) for p in seen)


def _sequences(run) -> list[list[int]]:
    out = []
    for policy in run.policies:
        sample = policy.tokens.sample(None)
        out.append(sample["prompt_ids"] + sample["completion_ids"])
    return out


def test_an_episode_over_the_engines_context_ends_alone_and_its_batch_goes_on(small_corpus, tiny_model):
    tasks = load_tasks(small_corpus)[:3]
    model, tokenizer = load_transformers(str(tiny_model))
    generator = TransformersGenerator(model, tokenizer, max_new_tokens=24)
    long_query = "Run the tests and report every failure. " * 400  # thousands of tokens in one prompt
    episodes = [partial(run_episode, t, small_corpus, max_turns=3, sandbox=SandboxSpec("local")) for t in tasks]
    episodes[1] = partial(
        run_episode, tasks[1], small_corpus, max_turns=3, sandbox=SandboxSpec("local"), query=long_query
    )
    run = run_lockstep(episodes, generator, tokens=_episode_tokens(tokenizer, max_model_len=1500))
    crashed = run.trajectories[1]
    assert crashed.termination == "crash" and "PromptTooLong" in crashed.error and "max_model_len" in crashed.error
    for traj in (run.trajectories[0], run.trajectories[2]):
        assert traj.termination != "crash" and any(m["role"] == "assistant" for m in traj.messages)
    assert run.policies[1].tokens.sample(None)["truncated"]
