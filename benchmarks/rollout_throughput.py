"""Episodes per minute of the collection runner at concurrency 1, 8 and 32, scripted teacher, one run.

The tasks are I/O-bound, as much real test execution is: generated Python projects whose test session first
waits for a service (a `conftest.py` that sleeps `--wait` seconds, standing in for a database container that
starts). Rollouts then overlap their waiting; on CPU-bound suites a 2-core machine cannot scale past ~2x.
Writes results/benchmarks/rollout_throughput.json: {"episodes_per_min": {"1": x, "8": y, "32": z},
"speedup_32": z/x, ...}.

    python benchmarks/rollout_throughput.py [--episodes 32] [--wait 3]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from benchmark_result import write_result
from terminus.collect.collect import collect
from terminus.models import make_policy
from terminus.sandbox import SandboxSpec, default_backend
from terminus.settings import TURN_LIMIT
from terminus.tasks.record import Task, write_tasks
from terminus.tasks.synthetic import DOMAINS, generate

WAIT = """import time

import pytest


@pytest.fixture(scope="session", autouse=True)
def ledger_database():
    time.sleep({wait})  # the test database container takes a moment to accept connections
    yield
"""


def corpus(root: Path, n: int, wait: float) -> Path:
    tasks = []
    domains = list(DOMAINS)
    for i in range(n):
        project = generate("python", domains[i % len(domains)], "fail", index=i // len(domains), seed=i)
        name = f"io-{i:03d}"
        project.write(root / "repos" / name)
        (root / "repos" / name / project.spec.subfolder / "conftest.py").write_text(WAIT.format(wait=wait))
        tasks.append(
            Task(
                id=name,
                language="python",
                source="synthetic",
                repo=name,
                task_type="test-execution",
                query="Run the tests and tell me what fails.",
                facts=project.facts,
                split="train",
                workspace=f"repos/{name}",
            )
        )
    write_tasks(root / "tasks.jsonl", tasks)
    return root / "tasks.jsonl"


def measure(episodes: int, serial: int, wait: float, levels: tuple[int, ...]) -> tuple[dict, dict]:
    policy = make_policy("scripted")
    rates, answered = {}, {}
    with tempfile.TemporaryDirectory() as tmp:
        tasks = corpus(Path(tmp), episodes, wait)
        for concurrency in levels:
            n = serial if concurrency == 1 else episodes
            subset = Path(tmp) / f"tasks-{concurrency}.jsonl"
            subset.write_text("".join(tasks.read_text().splitlines(keepends=True)[:n]))
            start = time.perf_counter()
            records = collect(
                subset,
                policy,
                Path(tmp) / f"out-{concurrency}.jsonl",
                splits=("train",),
                sandbox=SandboxSpec(),
                max_turns=TURN_LIMIT,
                concurrency=concurrency,
                show_progress=False,
            )
            seconds = time.perf_counter() - start
            rates[str(concurrency)] = round(len(records) / seconds * 60, 1)
            answered[str(concurrency)] = sum(r["termination"] == "final_answer" for r in records) / len(records)
            print(
                f"concurrency {concurrency:>2}: {len(records)} episodes in {seconds:.1f} s "
                f"= {rates[str(concurrency)]} episodes/min"
            )
    return rates, answered


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=32, help="episodes at concurrency 8 and 32")
    parser.add_argument("--serial-episodes", type=int, default=8, help="episodes at concurrency 1")
    parser.add_argument("--wait", type=float, default=5.0, help="seconds each test session waits")
    args = parser.parse_args()
    rates, answered = measure(args.episodes, args.serial_episodes, args.wait, (1, 8, 32))
    print("the same episodes without the wait (CPU-bound: bounded by the cores):")
    cpu_rates, _ = measure(args.episodes, args.serial_episodes, 0.0, (1, 32))
    result = {
        "episodes_per_min": rates,
        "speedup_32": round(rates["32"] / rates["1"], 2),
        "speedup_8": round(rates["8"] / rates["1"], 2),
        "final_answer_rate": answered,
        "wait_s": args.wait,
        "cpu_bound": {"episodes_per_min": cpu_rates, "speedup_32": round(cpu_rates["32"] / cpu_rates["1"], 2)},
        "episodes": {"1": args.serial_episodes, "8": args.episodes, "32": args.episodes},
        "backend": default_backend(),
        "teacher": "scripted",
    }
    write_result("rollout_throughput", result)


if __name__ == "__main__":
    main()
