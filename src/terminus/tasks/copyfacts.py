"""The copy-the-fact family (issue 45's L1 positive control): Python test-execution tasks whose every fact is drawn
fresh per task, so that an answer can only state them by copying them from what its command printed.

Each project is one pytest file of 3-9 tests named from two word lists (`test_<adjective>_<noun>`, ~4,600 names),
1-2 of them failing (none in about one project of six), at line numbers moved by a random number of comment lines.
`pyproject.toml` sets `--tb=line`, so the one command every expert runs, `python3 -m pytest -q`, prints 2-10 lines:
the progress line; per failure an `E` line and a `path:line: assert ...` line under the failures header, and a
`FAILED <id>` line in the short summary; the counts. Nothing in the family can be memorised (the names, counts
and lines are new in every task) and command choice drops out (every task is run by the same command), so what a
model answers measures the fact path alone: observation -> context -> answer -> parser -> fact checker.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from pathlib import Path

from terminus.tasks.synthetic.render import write_files

ADJECTIVES = (  # noqa: SIM905 - a list of words, read as one
    "amber brisk calm dusty eager faint gentle hollow icy jolly keen lively mellow narrow odd pale quick rapid "
    "sandy tidy upper vivid wary young zesty bold crisp dense early fierce grand humble inner lean merry noble open "
    "plain quiet rough sharp tall urban vast warm bright cool deep fresh golden heavy light loud mild neat proud "
    "rich silent smooth soft solid stark steady sweet swift tender thick thin tiny vocal weary wide wild wise"
).split()
NOUNS = (  # noqa: SIM905 - a list of words, read as one
    "anchor basket candle delta ember falcon garden harbor island jacket kernel ladder meadow needle orchard pebble "
    "quarry river saddle timber umbrella valley willow yarrow zenith badge cargo drum engine fabric glacier hammer "
    "ink jewel kettle lantern marble nickel oyster parcel quiver ribbon signal tunnel vessel wagon beacon cobalt "
    "dune ferry gravel hinge ivory lagoon mirror nectar otter pillar rocket summit thistle velvet walnut"
).split()


@dataclass
class CopyProject:
    """A project's files and its facts (the `tests` and `exit_code` facts of a synthetic pass/fail project)."""

    files: dict[str, str]
    facts: dict
    package: str

    def write(self, root: Path) -> Path:
        return write_files(self.files, root)


def generate(index: int, seed: int) -> CopyProject:
    """Project `index` of the family under `seed`: deterministic in both, different for every index."""
    rng = random.Random(f"copyfacts/{seed}/{index}")
    module = rng.choice(NOUNS)
    package = f"{module}{index}"
    total = rng.randint(3, 9)
    failed = 0 if rng.random() < 1 / 6 else rng.randint(1, 2)
    names: list[str] = []
    while len(names) < total:
        name = f"test_{rng.choice(ADJECTIVES)}_{rng.choice(NOUNS)}"
        if name not in names:
            names.append(name)
    failing = set(rng.sample(range(total), failed))
    path = f"tests/test_{module}.py"
    lines = [f'"""Checks of the {module} arithmetic."""']
    ids, locations = [], []
    for k, name in enumerate(names):
        lines += ["", *(f"# case {k}.{j}" for j in range(rng.randint(0, 12))), "", f"def {name}():"]
        a, b = rng.randint(2, 99), rng.randint(2, 99)
        expected = a + b + (rng.randint(1, 9) if k in failing else 0)
        lines.append(f"    assert {a} + {b} == {expected}")
        if k in failing:
            ids.append(f"{path}::{name}")
            locations.append(f"{path}:{len(lines)}")
    pyproject = "\n".join(
        [
            "[project]",
            f'name = "{package}"',
            'version = "0.1.0"',
            'requires-python = ">=3.9"',
            "",
            "[tool.pytest.ini_options]",
            'testpaths = ["tests"]',
            'addopts = "--tb=line -p no:cacheprovider"',
        ]
    )
    facts: dict = {
        "project_root": ".",
        "tests": {"passed": total - failed, "failed": failed, "skipped": 0, "failing": ids},
        "exit_code": 1 if failed else 0,
    }
    if failed:
        facts["error"] = {"type": "AssertionError", "locations": locations, "root_cause": locations[0]}
    return CopyProject({"pyproject.toml": pyproject + "\n", path: "\n".join(lines) + "\n"}, facts, package)
