"""Median per-command overhead of each sandbox backend over a bare `subprocess.run(["true"])`.

All backends are measured side by side in one run (the machine is noisy; interleaving rounds keeps the
comparison fair). Writes results/benchmarks/sandbox_overhead.json and prints it.

    python benchmarks/sandbox_overhead.py [--n 200] [--docker-url unix:///path/docker.sock]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import time

from benchmark_result import write_result
from terminus.sandbox import SandboxError, SandboxSpec, make_sandbox
from terminus.sandbox.bwrap import bwrap_path


def _time(fn) -> float:
    start = time.perf_counter()
    fn()
    return (time.perf_counter() - start) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=200, help="commands per backend")
    parser.add_argument("--docker-url", default=None, help="Docker engine socket (skipped when unreachable)")
    args = parser.parse_args()

    boxes = {"local": make_sandbox(SandboxSpec("local"))}
    if bwrap_path():
        boxes["bwrap"] = make_sandbox(SandboxSpec("bwrap"))
    if args.docker_url:
        from terminus.sandbox.docker import HOST_IMAGE

        try:
            boxes["docker"] = make_sandbox(SandboxSpec("docker", HOST_IMAGE, docker_url=args.docker_url))
        except SandboxError as err:
            print(f"docker skipped: {err}")
    samples: dict[str, list[float]] = {name: [] for name in ["bare", *boxes]}
    try:
        for box in boxes.values():  # warm-up
            box.run("true", 10)
        for i in range(args.n):
            samples["bare"].append(_time(lambda: subprocess.run(["true"], check=True)))
            for name, box in boxes.items():
                if name == "docker" and i % 5:  # docker is ~50x slower; a fifth of the rounds is plenty
                    continue
                samples[name].append(_time(lambda box=box: box.run("true", 10)))
    finally:
        for box in boxes.values():
            box.close()
    bare = statistics.median(samples["bare"])
    report = {
        name: {"median_overhead_ms": round(statistics.median(times) - bare, 3), "n": len(times)}
        for name, times in samples.items()
        if name != "bare"
    }
    print(f"bare subprocess.run(['true']): median {bare:.3f} ms over {len(samples['bare'])} runs")
    write_result("sandbox_overhead", report, indent=2)


if __name__ == "__main__":
    main()
