"""eval/noninferiority.csv's rows on records whose answer is known: a copy of the reference on 500 tasks is
non-inferior, an arm that resolves nothing is inferior, 3 tied tasks are inconclusive; Holm adjusts within a
benchmark and reference; the references are the subagent `none` with `full` and the best of truncate and mask,
kinds read from the mapping, never from the names."""

from __future__ import annotations

import pytest

from builders import arm_record as rec
from terminus.eval.noninferiority import (
    COLUMNS,
    ArmsError,
    both_resolved_costs,
    noninferiority_rows,
    reference_arms,
)
from terminus.stats import holm, noninferiority_test

KINDS = {"full": "full", "trunc10k": "truncate", "mask10": "mask", "extract": "extract"}


def known_records() -> list[dict]:
    out = []
    for i in range(500):  # repair: the reference resolves every other task
        won = float(i % 2 == 0)
        out.append(rec("reader__none__full", f"r{i}", won))
        out.append(rec("reader__none__trunc10k", f"r{i}", won, cost=0.5))
        out.append(rec("reader__base__full", f"r{i}", 0.0))
        out += [rec("reader__grpo__full", f"r{i}", won, seed=s) for s in range(3)]
    for i in range(3):  # smoke scale: everyone resolves all three
        for arm in ("reader__none__full", "reader__none__mask10", "reader__grpo__full"):
            out.append(rec(arm, f"s{i}", 1.0, benchmark="small"))
    for i in range(4):  # no outcome
        for arm in ("reader__none__full", "reader__grpo__full"):
            out.append(rec(arm, f"e{i}", None, benchmark="execution"))
    return out


def by_key(rows: list[dict]) -> dict[tuple[str, str, str], dict]:
    return {(r["benchmark"], r["arm"], r["reference"]): r for r in rows}


def test_known_verdicts_columns_and_no_rows_without_outcomes():
    rows = noninferiority_rows(known_records(), 0.025, context_kinds=KINDS)
    assert all(tuple(r) == COLUMNS for r in rows)
    assert COLUMNS[:9] == ("benchmark", "arm", "reference", "resolve_diff", "lo", "hi", "margin", "p_holm", "verdict")
    got = by_key(rows)
    full, trunc = "reader__none__full", "reader__none__trunc10k"
    same = got[("repair", "reader__grpo__full", full)]
    assert same["verdict"] == "non-inferior" and same["resolve_diff"] == 0.0 and -0.025 < same["lo"] <= 0.0
    assert same["n_tasks"] == 500 and same["n_runs"] == 3 and same["p_holm"] < 0.05
    bad = got[("repair", "reader__base__full", full)]
    assert bad["verdict"] == "inferior" and bad["resolve_diff"] == -0.5 and bad["hi"] < -0.025
    assert got[("repair", trunc, full)]["verdict"] == "non-inferior"
    assert got[("repair", full, trunc)]["verdict"] == "non-inferior"  # none x full against the other reference
    for arm in ("reader__none__mask10", "reader__grpo__full"):
        small = got[("small", arm, full)]
        assert small["verdict"] == "inconclusive" and small["n_tasks"] == 3 and small["resolve_diff"] == 0.0
    assert not any(r["benchmark"] == "execution" for r in rows)
    assert not any(r["arm"] == r["reference"] for r in rows)
    expected = {
        ("repair", a, ref)
        for ref in (full, trunc)
        for a in (full, trunc, "reader__base__full", "reader__grpo__full")
        if a != ref
    } | {
        ("small", a, ref)
        for ref in (full, "reader__none__mask10")
        for a in (full, "reader__none__mask10", "reader__grpo__full")
        if a != ref
    }
    assert set(got) == expected


def test_resolve_diff_pairs_tasks_and_averages_runs_within_a_task():
    records = [rec("m__none__full", f"t{i}", 1.0) for i in range(4)]
    # seed 0 resolves all four, seed 1 only t0: per-task means 1, .5, .5, .5; t4 has no reference and is not paired
    records += [rec("m__sft__full", f"t{i}", 1.0, seed=0) for i in range(5)]
    records += [rec("m__sft__full", f"t{i}", float(i == 0), seed=1) for i in range(5)]
    (row,) = noninferiority_rows(records, 0.05, context_kinds=KINDS)
    assert row["resolve_diff"] == pytest.approx(-0.375) and row["n_tasks"] == 4 and row["n_runs"] == 2


def test_holm_orders_the_arms_of_a_benchmark_against_one_reference():
    records = []
    share = {"m__a__full": 8, "m__b__full": 2, "m__c__full": 0}  # tasks of 40 each arm resolves, the reference none
    for i in range(40):
        records.append(rec("m__none__full", f"t{i}", 0.0))
        records += [rec(arm, f"t{i}", float(i < k)) for arm, k in share.items()]
    got = {r["arm"]: r for r in noninferiority_rows(records, 0.025, context_kinds=KINDS)}
    raw = {arm: noninferiority_test([float(i < k) for i in range(40)], 0.025).p for arm, k in share.items()}
    adjusted = dict(zip(raw, holm(list(raw.values())), strict=True))
    for arm in share:
        assert got[arm]["p_holm"] == pytest.approx(adjusted[arm], abs=1e-4)
    assert got["m__a__full"]["p_holm"] < got["m__b__full"]["p_holm"] < got["m__c__full"]["p_holm"]
    # b alone would pass at 5% (0.925^40 = 0.044); among three arms Holm doubles it
    assert raw["m__b__full"] < 0.05 < got["m__b__full"]["p_holm"] == pytest.approx(2 * raw["m__b__full"], abs=1e-4)
    assert [got[a]["verdict"] for a in share] == ["non-inferior", "inconclusive", "inconclusive"]


def test_references_take_kinds_from_the_mapping_and_break_ties_by_cost():
    kinds = {"plain": "full", "keep10": "truncate", "trunc5k": "mask", "lines": "extract"}
    records = []
    for i in range(4):
        records.append(rec("m__none__plain", f"t{i}", 1.0))
        records.append(rec("m__none__keep10", f"t{i}", float(i < 3), cost=0.3))
        records.append(rec("m__none__trunc5k", f"t{i}", float(i < 3), cost=0.2))  # as good, cheaper
        records.append(rec("m__none__lines", f"t{i}", 1.0, cost=0.1))  # better and cheaper, but not truncate/mask
    assert reference_arms(records, kinds) == {("repair", "m"): ["m__none__plain", "m__none__trunc5k"]}
    records += [rec("m__none__keep10", f"t{i}", 1.0, seed=1, cost=0.3) for i in range(4)]  # now the better one
    assert reference_arms(records, kinds)[("repair", "m")][1] == "m__none__keep10"


def test_both_resolved_costs_counts_tasks_every_run_of_both_arms_resolved():
    arm, ref = "m__sft__full", "m__none__full"
    records = [
        rec(arm, "t0", 1.0, seed=0, cost=0.2, tokens=200),
        rec(arm, "t0", 1.0, seed=1, cost=0.4, tokens=400),
        rec(ref, "t0", 1.0, cost=1.0, tokens=1000),
        rec(arm, "t1", 1.0, seed=0, cost=0.1, tokens=100),  # one seed of two: not resolved
        rec(arm, "t1", 0.0, seed=1, cost=0.1, tokens=100),
        rec(ref, "t1", 1.0, cost=1.0, tokens=1000),
        rec(arm, "t2", 1.0, cost=0.1, tokens=100),
        rec(ref, "t2", 0.0, cost=9.0, tokens=9000),  # the reference failed it
        rec(arm, "t3", 1.0, seed=0, cost=0.5, tokens=500),
        rec(arm, "t3", 1.0, seed=1, cost=0.5, tokens=500),
        rec(ref, "t3", 1.0, cost=2.0, tokens=2000),
        rec(arm, "t0", 1.0, benchmark="other", cost=50.0, tokens=1),
        rec(ref, "t0", 1.0, benchmark="other", cost=50.0, tokens=1),
    ]
    assert both_resolved_costs(records, arm, ref, benchmark="repair") == {
        "n_tasks": 2,
        "arm_total_tokens": 400.0,
        "arm_cost_usd": 0.4,
        "reference_total_tokens": 1500.0,
        "reference_cost_usd": 1.5,
    }
    assert both_resolved_costs(records, arm, ref)["n_tasks"] == 3  # (benchmark, task) pairs: other/t0 counts
    none = both_resolved_costs(records, arm, "m__base__full")
    assert none["n_tasks"] == 0 and none["arm_cost_usd"] is None


def test_what_the_user_can_get_wrong_is_one_clear_error():
    records = known_records()
    with pytest.raises(ArmsError, match="rate units"):
        noninferiority_rows(records, 2.5, context_kinds=KINDS)
    with pytest.raises(ArmsError, match="mask10"):
        noninferiority_rows(records, 0.025, context_kinds={"full": "full", "trunc10k": "truncate"})
    old = [{k: v for k, v in r.items() if k != "context"} for r in records[:3]]
    with pytest.raises(ArmsError, match="no context"):
        noninferiority_rows(old, 0.025, context_kinds=KINDS)


def test_an_arm_with_no_task_in_common_still_gets_its_row():
    records = [rec("m__none__full", "t0", 1.0), rec("m__sft__full", "t1", 1.0)]
    (row,) = noninferiority_rows(records, 0.025, context_kinds=KINDS)
    assert row["arm"] == "m__sft__full" and row["n_tasks"] == 0 and row["verdict"] == "inconclusive"
    assert row["resolve_diff"] is None and row["p_holm"] == 1.0
