"""Issue 45's controls: the copy-the-fact family's facts are what pytest prints; the swapped policy makes an answer
that copies what it reads wrong (the scripted expert, which copies perfectly, scores 1 as it is and 0 swapped,
through the real loop and sandbox); GRPO's shuffled reward keeps each group's rewards and breaks their link to the
rollouts; the fact path splits recall into a command that printed the facts and an answer that stated them; the
benchmark's targets and its check report a miss as a miss."""

from __future__ import annotations

import importlib.util
import random
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from terminus.config import ROOT
from terminus.judge.facts import check, fact_path, observations_of
from terminus.tasks import copyfacts
from terminus.train.evaluate import SwappedPolicy, path_rates, swap_partners
from terminus.train.grpo import ShuffledReward


def test_copy_projects_print_the_facts_they_declare(tmp_path):
    for index in range(6):
        project = copyfacts.generate(index, seed=3)
        root = project.write(tmp_path / str(index))
        out = subprocess.run([sys.executable, "-m", "pytest", "-q"], cwd=root, capture_output=True, text=True).stdout
        tests = project.facts["tests"]
        assert f"{tests['passed']} passed" in out
        assert (f"{tests['failed']} failed" in out) == bool(tests["failed"])
        assert re.findall(r"^FAILED (\S+)", out, re.M) == tests["failing"]
        for location in project.facts.get("error", {}).get("locations", []):
            assert f"{location}: assert" in out  # --tb=line prints path:line
        assert 2 <= len(out.strip().splitlines()) <= 10


def test_copy_values_are_fresh_in_every_task_and_repeat_with_the_seed():
    projects = [copyfacts.generate(i, seed=0) for i in range(200)]
    assert copyfacts.generate(7, seed=0).facts == projects[7].facts
    names = [t.split("::")[1] for p in projects for t in p.facts["tests"]["failing"]]
    assert len(set(names)) > 0.9 * len(names)  # failing test names almost never repeat
    assert len({p.facts["tests"]["passed"] for p in projects}) >= 7
    assert {p.facts["tests"]["failed"] for p in projects} == {0, 1, 2}
    assert copyfacts.generate(0, seed=1).facts != projects[0].facts


@pytest.fixture(scope="module")
def copy_corpus(tmp_path_factory) -> Path:
    """A copy-family corpus built by `terminus tasks build`, as the control's pipeline builds it."""
    root = tmp_path_factory.mktemp("copy")
    config = yaml.safe_load((ROOT / "configs" / "copy-control.yaml").read_text())
    config["tasks"]["copy"]["repos"] = 12
    config["tasks"]["splits"] = {"train": 0.5, "val": 0.0, "test": 0.5}
    (root / "config.yaml").write_text(yaml.safe_dump(config))
    build = ["tasks", "build", "--config", str(root / "config.yaml"), "--out", str(root / "tasks.jsonl"), "--quiet"]
    subprocess.run([sys.executable, "-m", "terminus.cli", *build], check=True, cwd=root)
    return root / "tasks.jsonl"


def test_the_copy_config_builds_only_the_family(copy_corpus):
    from terminus.tasks.record import load_tasks

    tasks = load_tasks(copy_corpus)
    assert len(tasks) == 12
    assert {t.task_type for t in tasks} == {"test-execution"}
    assert {t.variant for t in tasks} == {"copy"} and all(t.repo.startswith("copy/") for t in tasks)


def test_swapping_tool_output_turns_a_perfect_copier_wrong(copy_corpus):
    """The scripted expert states what its commands printed. As it is, it recalls every fact; reading another
    task's output (one sharing no value), it states that task's facts, and recall falls to 0, while the record
    keeps what the commands really printed."""
    from terminus.collect.runner import run_episode
    from terminus.models.scripted import ScriptedPolicy
    from terminus.sandbox.spec import SandboxSpec
    from terminus.tasks.record import load_tasks

    tasks = [t for t in load_tasks(copy_corpus) if t.facts["tests"]["failed"]][:4]
    spec = SandboxSpec(None)
    real = [run_episode(t, copy_corpus, ScriptedPolicy(), sandbox=spec, max_turns=10).to_dict() for t in tasks]
    for task, record in zip(tasks, real, strict=True):
        assert (
            check(record["final_answer"], task.facts, task.task_type, observations_of(record["messages"])).recall == 1
        )
    partners = swap_partners(tasks, real)
    assert set(partners) == {t.id for t in tasks}
    for task in tasks:
        swapped = run_episode(
            task, copy_corpus, SwappedPolicy(ScriptedPolicy(), partners[task.id]), sandbox=spec, max_turns=10
        ).to_dict()
        observed = observations_of(swapped["messages"])
        assert check(swapped["final_answer"], task.facts, task.task_type, observed).recall == 0
        assert task.facts["tests"]["failing"][0] in observed  # the record holds the real output
        path = fact_path(swapped["final_answer"], task.facts, task.task_type, observed)
        assert path["printed"] == path["required"] and path["stated"] == 0


def test_swapped_policy_shows_the_other_outputs_in_order():
    seen = []

    class Echo:
        name = "echo"

        def respond(self, messages, tools, tool_choice=None):
            seen.append([m["content"] for m in messages if m["role"] == "tool"])
            return {"content": "x"}

    policy = SwappedPolicy(Echo(), ["listing B", "tests B"])
    messages = [
        {"role": "user", "content": "q"},
        {"role": "tool", "content": "listing A"},
        {"role": "tool", "content": "tests A"},
        {"role": "tool", "content": "more A"},
    ]
    policy.respond(messages, [])
    assert seen == [["listing B", "tests B", "tests B"]]
    assert messages[1]["content"] == "listing A"  # the conversation itself is not changed
    with pytest.raises(ValueError, match="another task's tool output"):
        SwappedPolicy(Echo(), [])


def test_swap_partners_share_no_required_value():
    from terminus.tasks.record import Task

    def task(i, passed, failed, names):
        facts = {"tests": {"passed": passed, "failed": failed, "failing": names}}
        return Task(
            id=f"t{i}",
            language="python",
            source="synthetic",
            repo=f"r{i}",
            task_type="test-execution",
            query="q",
            facts=facts,
        )

    tasks = [task(0, 5, 1, ["a"]), task(1, 5, 2, ["b"]), task(2, 3, 1, ["c"]), task(3, 4, 2, ["d"])]
    expert = [{"task_id": t.id, "messages": [{"role": "tool", "content": f"out {t.id}"}]} for t in tasks]
    partners = swap_partners(tasks, expert)
    assert partners["t0"] == ["out t3"]  # t1 shares 5 passed, t2 shares 1 failed
    assert partners["t1"] == ["out t2"]


def test_shuffled_reward_keeps_each_group_and_breaks_the_link():
    rewards = [0.0, 0.1, 0.2, 0.3, None, 0.5, 0.6, 0.7]
    shuffled = ShuffledReward(lambda *a, **k: list(rewards), group=4, seed=0)
    outs = [shuffled(prompts=None, completions=[None] * 8) for _ in range(20)]
    for out in outs:
        assert sorted(out[:4]) == [0.0, 0.1, 0.2, 0.3]
        assert out[4] is None and sorted(out[5:]) == [0.5, 0.6, 0.7]
    assert any(out != rewards for out in outs)
    assert shuffled.__name__ == "<lambda>"


def test_path_rates_split_recall_into_printed_and_stated():
    paths = [
        {"required": 3, "printed": 3, "stated": 3, "stated_and_printed": 3},  # copied all
        {"required": 3, "printed": 3, "stated": 0, "stated_and_printed": 0},  # saw, did not say
        {"required": 2, "printed": 0, "stated": 0, "stated_and_printed": 0},  # never ran the command
        {"required": 0, "printed": 0, "stated": 0, "stated_and_printed": 0},  # nothing to find: not counted
    ]
    assert path_rates(paths) == {"p_command": 0.6667, "p_stated_given_printed": 0.5}
    assert path_rates([]) == {"p_command": None, "p_stated_given_printed": None}


def test_fact_path_gives_nothing_to_an_answer_that_ran_no_command_or_copies_facts():
    facts = {"tests": {"passed": 4, "failed": 1, "failing": ["tests/test_a.py::test_brisk_otter"]}}
    printed = (
        "...F\nFAILED tests/test_a.py::test_brisk_otter - assert 1 == 2\n1 failed, 4 passed in 0.01s\n[exit code 1]"
    )
    messages = [
        {
            "role": "assistant",
            "tool_calls": [
                {"function": {"name": "run_in_terminal", "arguments": '{"command": "python3 -m pytest -q"}'}}
            ],
        },
        {"role": "tool", "content": printed},
    ]
    good = [
        {
            "command": "python3 -m pytest -q",
            "summary": "1 failed, 4 passed; failing: tests/test_a.py::test_brisk_otter",
        }
    ]
    assert fact_path(good, facts, "test-execution", observations_of(messages)) == {
        "required": 3,
        "printed": 3,
        "stated": 3,
        "stated_and_printed": 3,
    }
    # the same facts with no command run: nothing printed, nothing grounded, nothing stated
    assert fact_path(good, facts, "test-execution", "")["stated"] == 0
    # markup in the answer: not usable, so nothing is stated although everything was printed
    marked = [dict(good[0], summary=good[0]["summary"] + " </tool_call>")]
    assert fact_path(marked, facts, "test-execution", observations_of(messages))["stated"] == 0


def _benchmark():
    spec = importlib.util.spec_from_file_location("copy_control", ROOT / "benchmarks" / "copy_control.py")
    module = importlib.util.module_from_spec(spec)
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))
    return module


def _rate(mean, lo=None, hi=None):
    return {"mean": mean, "lo": mean if lo is None else lo, "hi": mean if hi is None else hi, "n": 100}


def test_control_targets_report_a_miss_as_a_miss():
    bench = _benchmark()
    copy = [
        {"sft_recall": _rate(0.85), "swapped_recall": _rate(0.02)},
        {"sft_recall": _rate(0.6), "swapped_recall": _rate(0.02)},
    ]
    grpo = [
        {"diff": _rate(0.1, 0.02, 0.18), "shuffled_diff": _rate(0.0, -0.05, 0.05)},
        {"diff": _rate(0.05, -0.01, 0.11), "shuffled_diff": _rate(0.08, 0.01, 0.15)},
    ]
    targets = bench.targets(copy, grpo)
    assert targets["copy_recall_every_seed"]["met"] is False
    assert targets["copy_swapped_recall_every_seed"]["met"] is True
    assert targets["grpo_diff_above_zero"]["met"] is False  # 1 of 2 seeds
    assert targets["grpo_shuffled_contains_zero"]["met"] is False  # the shuffled run rose on seed 1
    assert targets["environment_as_trained_every_seed"]["met"] is False  # no environment check: not claimed
    copy[0]["environment"] = copy[1]["environment"] = {"unseen": [], "same": True}
    assert bench.targets(copy, grpo)["environment_as_trained_every_seed"]["met"] is True


def test_an_episode_in_another_environment_than_training_is_caught(tmp_path):
    """The expert's `[toolchain: ...]` line is the environment's fingerprint: a held-out episode whose line no
    training trajectory held was run elsewhere (the host's pyenv shim instead of the venv), and is named."""
    import json

    from terminus.train.evaluate import environment_check

    def episodes(path, *toolchains):
        tool = "2 passed in 0.01s\n[toolchain: {} Python 3.11.7]\n[exit code 0]"
        rows = [{"messages": [{"role": "user", "content": "[toolchain: not a tool message]"},
                              {"role": "tool", "content": tool.format(t)}]} for t in toolchains]  # fmt: skip
        path.write_text("".join(json.dumps(r) + "\n" for r in rows))
        return path

    train = episodes(tmp_path / "train.jsonl", "/toolchains/venv/bin/python3", "/toolchains/venv/bin/python3")
    same = episodes(tmp_path / "same.jsonl", "/toolchains/venv/bin/python3")
    other = episodes(tmp_path / "other.jsonl", "/root/.pyenv/shims/python3")
    assert environment_check(train, [same]) == {"train": ["/toolchains/venv/bin/python3"], "unseen": [], "same": True}
    # a model's own echo may pair a known path with another tool's version: its text, not the environment
    mixed = episodes(tmp_path / "mixed.jsonl", "/toolchains/venv/bin/python3 go version go1.19.8;")
    assert environment_check(train, [mixed])["same"]
    caught = environment_check(train, [same, other, tmp_path / "missing.jsonl"])
    assert caught["unseen"] == ["[toolchain: /root/.pyenv/shims/python3 Python 3.11.7]"] and not caught["same"]


def test_learning_check_fails_on_figures_beyond_tolerance():
    bench = _benchmark()
    row = {
        "seed": 0,
        **{k: _rate(0.5) for k in ("sft_recall", "swapped_recall", "fact_token_acc_real", "fact_token_acc_swapped")},
    }
    grow = {"seed": 0, **{k: _rate(0.1) for k in ("recall_before", "recall_after", "diff", "shuffled_diff")}}
    committed = {"copy_control": {"per_seed": [row]}, "grpo_control": {"per_seed": [grow]}}
    near = {"copy_control": {"per_seed": [row | {"sft_recall": _rate(0.52)}]}, "grpo_control": {"per_seed": [grow]}}
    assert bench.compare(near, committed) == []
    far = {"copy_control": {"per_seed": [row | {"sft_recall": _rate(0.3)}]}, "grpo_control": {"per_seed": [grow]}}
    assert bench.compare(far, committed) == ["copy_control seed 0 sft_recall: 0.3 now, 0.5 committed (tolerance 0.05)"]
    assert "no committed figures" in bench.compare(far, {})[0]


def test_paired_and_rate_intervals():
    bench = _benchmark()
    assert bench.rate([]) == {"mean": None, "lo": None, "hi": None, "n": 0}
    r = bench.rate([1.0, 1.0, 0.0, 1.0])
    assert r["n"] == 4 and r["hi"] == 1.0 and 0 <= r["lo"] < 0.75
    rng = random.Random(0)
    before = {f"t{i}": [rng.random() * 0.2 for _ in range(8)] for i in range(16)}
    after = {t: [v + 0.3 for v in vs] for t, vs in before.items()}
    d = bench.paired(before, after)
    assert d["n"] == 16 and abs(d["mean"] - 0.3) < 1e-9 and d["lo"] > 0


def test_fact_kinds():
    from terminus.train.probe import fact_kind

    assert fact_kind("tests/test_a.py:41") == "location"
    assert fact_kind("17") == "number"
    assert fact_kind("tests/test_a.py::test_brisk_otter") == "test" and fact_kind("test_brisk_otter") == "test"


def test_grpo_measures_on_held_out_tasks_it_never_trains_on(copy_corpus):
    from terminus.tasks.record import load_tasks
    from terminus.train import TrainingInputError
    from terminus.train.grpo import held_out_tasks

    tasks = load_tasks(copy_corpus)
    training = {t.id: t for t in tasks if t.split == "train"}
    drawn = held_out_tasks(copy_corpus, "test", 4, seed=0, training=training)
    assert len(drawn) == 4 and all(t.split == "test" for t in drawn.values()) and not set(drawn) & set(training)
    assert drawn == held_out_tasks(copy_corpus, "test", 4, seed=0, training=training)
    with pytest.raises(TrainingInputError, match="0 val tasks"):
        held_out_tasks(copy_corpus, "val", 4, seed=0, training=training)
