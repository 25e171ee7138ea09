"""Generators: deterministic, facts consistent with the spec, every fault a real fault. (That the facts match
real build and test output is checked in tests/agent/test_scripted_expert.py, through the toolchains.)"""

from __future__ import annotations

import random

import pytest

from terminus.tasks.record import validate_record
from terminus.tasks.synthetic import DOMAINS, SUPPORTED, evaluate, generate, make_spec, mutate

CASES = [(lang, v) for lang, variants in SUPPORTED.items() for v in variants]


@pytest.mark.parametrize(("language", "variant"), CASES)
def test_same_arguments_same_project(language, variant):
    a = generate(language, "billing", variant, index=2, seed=7)
    b = generate(language, "billing", variant, index=2, seed=7)
    assert a.files == b.files and a.facts == b.facts
    c = generate(language, "billing", variant, index=2, seed=8)
    assert c.files != a.files  # the seed matters


@pytest.mark.parametrize(("language", "variant"), CASES)
def test_facts_fit_the_task_schema(language, variant, tmp_path):
    project = generate(language, "fleet", variant, index=1, seed=0)
    record = {
        "schema": "terminus.task/1",
        "id": "x",
        "language": language,
        "source": "synthetic",
        "repo": "r",
        "task_type": "test-execution",
        "query": "q",
        "facts": project.facts,
        "split": "train",
    }
    validate_record(record)
    root = project.write(tmp_path / "repo")
    for loc in project.facts.get("error", {}).get("locations", []):  # every location is a real line
        path, line = loc.rsplit(":", 1)
        assert int(line) <= len((root / path).read_text().splitlines()), loc


def test_fail_variant_breaks_exactly_the_cases_it_says():
    for seed in range(20):
        project = generate("python", "payroll", "fail", index=seed % 3, seed=seed)
        spec = project.spec
        fn = spec.functions[spec.mutated]
        broken = [lab for lab, args, expected in fn.cases if evaluate(spec.mutated_expr, fn.params, args) != expected]
        failing = [t.rsplit("::test_", 1)[1] for t in project.facts["tests"]["failing"]]
        assert failing == [f"{fn.name}_{lab}" for lab in broken]
        assert project.facts["tests"]["failed"] == len(broken) > 0
        total = sum(len(f.cases) for f in spec.functions)
        assert project.facts["tests"]["passed"] == total - len(broken)


def test_mutation_flips_one_operator():
    rng = random.Random(0)
    for table, _ in DOMAINS.values():
        for _, _params, expr in table:
            new = mutate(expr, rng)
            assert new is not None and new != expr and len(new) == len(expr)
            assert sum(a != b for a, b in zip(expr, new, strict=True)) == 1


def test_realistic_names_not_placeholders():
    project = generate("go", "inventory", "pass", index=0, seed=0)
    text = " ".join(project.files)
    assert "foo" not in text and "bar" not in text
    assert any(name.endswith("_test.go") for name in project.files)


def test_bad_arguments_are_named():
    with pytest.raises(ValueError, match="unknown language 'cobol'"):
        make_spec("cobol", "billing", "pass", 0, 0)
    with pytest.raises(ValueError, match="not supported for go"):
        make_spec("go", "billing", "missing-dep", 0, 0)
