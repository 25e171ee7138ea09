"""Issue 42's arms: the main agent's context policies (what each does to what it reads, through the grid on real
tasks), the cell axis (five-part names, exclusions, deterministic cells run once), seeds that reach a sampling
policy, and the dollars an episode costs."""

from __future__ import annotations

import pytest

from builders import synthetic_corpus
from terminus.config import ConfigError, validate
from terminus.eval.cells import cell_names, cell_runs_once, find_cell
from terminus.eval.cost import CellPrices, token_price
from terminus.eval.grid import run_cell
from terminus.eval.summary import summarise
from terminus.judge.scorer import Scorer
from terminus.mainagent.context import PLACEHOLDER, SUMMARY_PREFIX, ContextPolicy, extract_lines, parse_ranges
from terminus.mainagent.harness import CACHE_MIN_TOKENS, MainAgentLoop
from terminus.mainagent.tokens import TokenCounter
from terminus.runspec import load_run
from terminus.tasks.record import load_tasks

LOG = "\n".join(
    [f"collecting line {i}" for i in range(200)]
    + ["tests/test_geometry.py:41: AssertionError: expected 12, got 13", "FAILED tests/test_geometry.py::test_area"]
    + [f"passing line {i}" for i in range(200)]
)


def _conversation(observations: int) -> list[dict]:
    messages = [{"role": "system", "content": "sys"}, {"role": "user", "content": "fix it"}]
    for i in range(observations):
        call = {"id": f"c{i}", "type": "function", "function": {"name": "run_in_terminal", "arguments": "{}"}}
        messages.append({"role": "assistant", "content": f"step {i}", "tool_calls": [call]})
        messages.append({"role": "tool", "tool_call_id": f"c{i}", "content": f"output {i} " + "x" * 500})
    return messages


# -- what each policy does to what the main agent reads ----------------------------------------------------------
def test_truncate_keeps_head_and_tail_within_its_bytes():
    out = ContextPolicy({"kind": "truncate", "max_bytes": 1000}).observe(LOG)
    assert len(out.encode()) < 1100 and out.startswith("collecting line 0") and out.endswith("passing line 199")
    assert "bytes truncated" in out and "AssertionError" not in out  # the failure sat in the middle: cut
    assert ContextPolicy({"kind": "truncate", "max_bytes": 10_000}).observe("short") == "short"


def test_extract_keeps_the_failure_lines_that_truncation_loses():
    out = extract_lines(LOG, 2000)
    assert "tests/test_geometry.py:41: AssertionError: expected 12, got 13" in out
    assert "FAILED tests/test_geometry.py::test_area" in out and "lines omitted" in out
    assert len(out.encode()) <= 2100


def test_mask_keeps_the_last_observations_and_never_the_last_message():
    policy = ContextPolicy({"kind": "mask", "keep": 2})
    messages = _conversation(5)
    out = policy.condense(messages, lambda m: 0)
    tools = [m for m in out if m["role"] == "tool"]
    assert [t["content"].startswith("[observation omitted") for t in tools] == [True, True, True, False, False]
    assert tools[0]["content"] == PLACEHOLDER.format(n=len(messages[3]["content"]))
    assert out[-1] == messages[-1] and policy.stats.masked == 3
    assert [m for m in out if m["role"] == "assistant"] == [m for m in messages if m["role"] == "assistant"]
    assert policy.condense(out, lambda m: 0) == out and policy.stats.masked == 3  # idempotent, counted once


def test_summarize_condenses_the_middle_with_a_real_model(tiny_model):
    from terminus.models.local import TransformersPolicy

    model = TransformersPolicy(str(tiny_model), max_new_tokens=8, temperature=1.0, seed=0)
    policy = ContextPolicy({"kind": "summarize", "trigger_tokens": 100, "keep": 3}, model)
    messages = _conversation(6)
    assert policy.condense(messages, lambda m: 50) == messages  # below the trigger: nothing
    out = policy.condense(messages, lambda m: 10_000)
    assert out[:2] == messages[:2] and out[2]["role"] == "user" and out[2]["content"].startswith(SUMMARY_PREFIX)
    assert out[3]["role"] == "assistant" and out[3:] == messages[-4:]  # a tool result keeps its call
    assert policy.stats.condensations == 1 and policy.stats.prompt_tokens > 0 and policy.stats.model_s > 0


def test_prune_falls_back_to_truncation_when_its_model_names_no_lines(tiny_model):
    from terminus.models.local import TransformersPolicy

    model = TransformersPolicy(str(tiny_model), max_new_tokens=4)  # greedy and untrained: no line ranges
    policy = ContextPolicy({"kind": "prune", "max_bytes": 1000, "max_input_chars": 3000}, model)
    out = policy.observe(LOG, "find the failing test")
    assert len(out.encode()) < 1100 and policy.stats.prompt_tokens > 0
    assert policy.stats.failures + policy.stats.condensations == 1
    assert parse_ranges("keep 2-4, 9 and 400-401", 10) == [2, 3, 4, 9]
    assert parse_ranges("nothing", 10) == []


def test_a_model_context_needs_its_model():
    with pytest.raises(ValueError, match="needs its model"):
        ContextPolicy({"kind": "summarize"})


def test_the_prefix_cache_estimate_breaks_where_masking_rewrites():
    counter = TokenCounter("qwen")
    loop = MainAgentLoop(brain=None, counter=counter)
    messages = _conversation(40)
    sent = messages[:-1]
    assert loop.cached(sent, messages, []) == counter.messages(messages[:-1]) >= CACHE_MIN_TOKENS
    masked = ContextPolicy({"kind": "mask", "keep": 2}).condense(messages, lambda m: 0)
    assert loop.cached(sent, masked, []) < loop.cached(sent, messages, [])
    assert loop.cached(messages[:3], messages, []) == 0  # below OpenAI's minimum: no cache


# -- the arms through the grid on real tasks ---------------------------------------------------------------------
@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    tasks_file = synthetic_corpus(
        tmp_path_factory.mktemp("arms"),
        {"languages": ["python", "go"], "repos_per_language": 2, "variants": ["fail"]},
        {"train": 0.0, "val": 0.0, "test": 1.0},
        run="armstest",
        eval={
            "subagents": [{"name": "none", "policy": "none"}],
            "main_agents": [{"name": "reader", "kind": "reader", "price_as": "claude-sonnet-4-5"}],
            "contexts": {
                "full": {"kind": "full"},
                "trunc1k": {"kind": "truncate", "max_bytes": 1000},
                "mask1": {"kind": "mask", "keep": 1},
                "extract": {"kind": "extract", "max_bytes": 1000},
            },
            "benchmarks": ["repair"],
            "concurrency": 2,
        },
    )
    return tasks_file.parent / "config.yaml", tasks_file


def test_masking_and_truncation_cost_the_reader_fewer_tokens_on_the_same_tasks(corpus, tmp_path):
    config_path, tasks_file = corpus
    run = load_run(config_path)
    scorer = Scorer(tasks={t.id: t for t in load_tasks(tasks_file)})
    records = []
    for name in cell_names(run.config["eval"]):
        records += run_cell(run, tasks_file, tmp_path, scorer, name, show_progress=False)
    by = {(r["context"], r["task_id"]): r for r in records}
    tasks = {r["task_id"] for r in records}
    assert {r["context"] for r in records} == {"full", "trunc1k", "mask1", "extract"} and len(tasks) >= 2

    def total(context):
        return sum(by[context, t]["main_agent_tokens"] for t in tasks)

    assert all(by["full", t]["resolved"] == 1.0 and by["full", t]["error"] is None for t in tasks)
    for context in ("trunc1k", "mask1", "extract"):
        assert total(context) < total("full"), context
    # masking hides only old observations: the reader, which acts on the last one, resolves what it resolved
    assert all(by["mask1", t]["resolved"] == 1.0 and by["mask1", t]["context_stats"]["masked"] > 0 for t in tasks)
    assert sum(by["trunc1k", t]["context_stats"]["cut"] for t in tasks) > 0
    for r in records:
        assert r["cost_usd"] == pytest.approx(r["token_cost_usd"]) and r["cost_usd"] > 0 and r["gpu_s"] == 0
        assert (
            r["main_tokens_uncached"] + r["main_tokens_cache_read"] + r["main_tokens_output"] == r["main_agent_tokens"]
        )
        assert r["peak_context_tokens"] <= r["main_agent_tokens"] and r["total_tokens"] == r["main_agent_tokens"]
        assert r["key"].split("|")[2] == r["context"]
    rows = {r["context"]: r for r in summarise(records, {})}
    assert rows["mask1"]["main_agent_tokens_diff"] < 0 and rows["full"].get("main_agent_tokens_diff") is None
    assert rows["full"]["n"] == len(tasks) and rows["full"]["runs"] == 1
    assert rows["full"]["cost_per_resolved_usd"] == pytest.approx(
        rows["full"]["cost_usd"] / rows["full"]["resolve_rate"], rel=1e-3
    )


# -- the cell axis -----------------------------------------------------------------------------------------------
def _eval(**over) -> dict:
    base = {
        "main_agents": [
            {"name": "reader", "kind": "reader"},
            {"name": "llm", "kind": "llm", "model": "m", "temperature": 1},
        ],
        "subagents": [{"name": "none", "policy": "none"}, {"name": "tiny", "policy": "transformers", "model": "x"}],
        "contexts": {"full": {"kind": "full"}, "mask3": {"kind": "mask", "keep": 3}},
        "benchmarks": ["repair", "execution"],
        "seeds": [0, 1, 2],
    }
    return base | over


def test_cells_have_five_part_names_exclusions_and_deterministic_cells_run_once():
    ev = _eval(exclude=[{"subagent": "tiny", "context": ["mask3"]}, {"main": "llm", "benchmark": "execution"}])
    names = cell_names(ev)
    assert all(len(n.split("__")) == 5 for n in names)
    assert "reader__none__mask3__repair__0" in names and "reader__tiny__mask3__repair__0" not in names
    # the reader with greedy or no subagents is deterministic: one run, under the first seed, and it says so
    assert [n for n in names if n.startswith("reader__none__full__repair")] == ["reader__none__full__repair__0"]
    assert cell_runs_once(ev, "reader__none__full__repair__0")
    # the llm main agent samples at temperature 1: three runs
    assert [n for n in names if n.startswith("llm__tiny__full__repair")] == [
        f"llm__tiny__full__repair__{s}" for s in range(3)
    ]
    # execution cells have no main agent: the first main agent's name, the full context, no subagent-less cell
    assert [n for n in names if "__execution__" in n] == ["reader__tiny__full__execution__0"]
    sampled = _eval(subagents=[{"name": "hot", "policy": "transformers", "model": "x", "temperature": 0.7}])
    assert [n for n in cell_names(sampled) if n.startswith("reader__hot__full__execution")] == [
        f"reader__hot__full__execution__{s}" for s in range(3)
    ]
    main, sub, context, bench, seed = find_cell(ev, "llm__tiny__full__repair__2")
    assert (main["name"], sub["name"], context, bench, seed) == ("llm", "tiny", "full", "repair", 2)


def test_a_context_name_holds_its_kind_and_full_is_required():
    def contexts(value):
        return validate({"run": "x", "tasks": {}, "eval": {"contexts": value}}, "c.yaml")

    full = {"full": {"kind": "full"}}
    assert contexts(full | {"mask2": {"kind": "mask", "keep": 2}}).eval.contexts["mask2"].keep == 2
    with pytest.raises(ConfigError, match="must hold its kind"):
        contexts(full | {"short": {"kind": "mask"}})
    with pytest.raises(ConfigError, match="needs `full"):
        contexts({"mask2": {"kind": "mask"}})
    with pytest.raises(ConfigError, match="model"):
        contexts(full | {"summarize": {"kind": "summarize"}})


# -- seeds reach the sampling ------------------------------------------------------------------------------------
def test_a_seed_changes_a_sampled_reply_and_the_same_seed_repeats_it(tiny_model):
    from terminus.models import shared_policy

    messages = [{"role": "system", "content": "You run commands."}, {"role": "user", "content": "run the tests"}]

    def reply(seed, temperature=1.0):
        with shared_policy(
            "transformers", str(tiny_model), max_new_tokens=24, temperature=temperature, seed=seed
        ) as p:
            return p.respond(messages, [])["content"]

    assert reply(0) == reply(0)
    assert len({reply(0), reply(1), reply(2)}) > 1
    assert reply(0, temperature=0) == reply(1, temperature=0)  # greedy: the seed changes nothing


def test_the_grid_hands_the_cell_seed_to_a_sampling_subagent(tiny_model, tmp_path):
    """`served_subagent` is how run_cell makes a cell's subagent: at the subagent's temperature, the cell's seed."""
    from terminus.eval.grid import served_subagent

    hot = {"name": "hot", "policy": "transformers", "model": str(tiny_model), "max_new_tokens": 24, "temperature": 1.0}
    messages = [{"role": "user", "content": "run the unit tests"}]

    def reply(spec, seed):
        with served_subagent(spec, tmp_path, seed) as policy:
            return policy.respond(messages, [])["content"]

    assert reply(hot, 0) == reply(hot, 0) and len({reply(hot, s) for s in range(3)}) > 1
    cold = hot | {"temperature": 0}
    assert reply(cold, 0) == reply(cold, 1)


# -- dollars -----------------------------------------------------------------------------------------------------
def test_an_episode_costs_its_tokens_at_cache_aware_prices_and_its_gpu_time():
    sonnet = token_price("claude-sonnet-4-5")
    assert (sonnet.input, sonnet.cache_read, sonnet.output) == (3.0, 0.3, 15.0)
    main = {"name": "r", "kind": "reader", "price_as": "claude-sonnet-4-5"}
    local = {"name": "t", "policy": "vllm", "model": "x"}
    prices = CellPrices.of(main, local, None, gpu_hour_usd=3.6)
    cost = prices.episode(main=(1_000_000, 1_000_000, 100_000), sub=(5, 5), sub_s=10.0)
    assert cost["token_cost_usd"] == pytest.approx(3.0 + 0.3 + 1.5)
    assert cost["gpu_s"] == 10.0 and cost["gpu_cost_usd"] == pytest.approx(0.01)
    assert cost["cost_usd"] == pytest.approx(4.81)
    unpriced = CellPrices.of({"name": "r", "kind": "reader"}, {"name": "none", "policy": "none"}, None, 2.5)
    assert unpriced.episode(main=(10, 0, 10), sub=(0, 0), sub_s=0)["cost_usd"] is None  # unknown, not free
    endpoint = CellPrices.of(main, {"name": "h", "policy": "openai", "model": "claude-haiku-4-5"}, None, 2.5)
    assert endpoint.episode(main=None, sub=(1_000_000, 0), sub_s=99)["cost_usd"] == pytest.approx(1.0)


# -- one episode's sandbox failure ends that episode, not the cell ---------------------------------------------
def test_a_task_whose_sandbox_cannot_start_fails_alone_and_a_rerun_retries_it(corpus, tmp_path):
    import shutil

    config_path, tasks_file = corpus
    copy = tmp_path / "corpus"
    shutil.copytree(tasks_file.parent, copy, symlinks=True)
    tasks_file = copy / tasks_file.name
    run = load_run(config_path)
    tasks = load_tasks(tasks_file)
    broken = next(t for t in tasks if t.meta.get("fix") and t.task_type == "test-execution")  # a repair task
    hidden = broken.workspace_path(tasks_file).rename(tmp_path / "hidden")
    scorer = Scorer(tasks={t.id: t for t in tasks})
    cell = "reader__none__full__repair__0"
    records = run_cell(run, tasks_file, tmp_path / "eval", scorer, cell, show_progress=False)
    by = {r["task_id"]: r for r in records}
    assert by[broken.id]["error"].startswith("infra: SandboxError") and by[broken.id]["resolved"] is None
    assert all(r["resolved"] == 1.0 for t, r in by.items() if t != broken.id)
    row = next(r for r in summarise(records, {}) if r["context"] == "full")
    assert row["error_rate"] == pytest.approx(1 / len(by)) and row["resolve_rate"] == 1.0  # out of the rate
    hidden.rename(broken.workspace_path(tasks_file))  # the engine is back: a rerun runs that episode alone
    again = {r["task_id"]: r for r in run_cell(run, tasks_file, tmp_path / "eval", scorer, cell, show_progress=False)}
    assert again[broken.id]["error"] is None and again[broken.id]["resolved"] == 1.0
    assert {t: r for t, r in again.items() if t != broken.id} == {t: r for t, r in by.items() if t != broken.id}
