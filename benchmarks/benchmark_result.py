"""How the benchmarks report: each writes its figures to results/benchmarks/<name>.json atomically, with a `stamp`
(commit, dirty, config hash, inputs, machine: `terminus.determinism.result_stamp`), and prints them."""

from __future__ import annotations

import json
from pathlib import Path

from terminus.determinism import result_stamp
from terminus.io import write_text_atomic

RESULTS = Path(__file__).resolve().parents[1] / "results" / "benchmarks"


def write_result(
    name: str,
    result: dict,
    indent: int = 1,
    printed: dict | None = None,
    config_hash: str | None = None,
    inputs: dict | None = None,
) -> Path:
    """Write results/benchmarks/<name>.json, stamped (unless `result` holds its own `stamp`), and print `printed`
    (all of `result` unless given)."""
    path = RESULTS / f"{name}.json"
    result = result if "stamp" in result else {**result, "stamp": result_stamp(config_hash, inputs)}
    write_text_atomic(path, json.dumps(result, indent=indent) + "\n")
    print(json.dumps(result if printed is None else printed, indent=indent))
    return path


def tiny_model_setup(max_new_tokens: int, max_turns: int, sandbox: str, device: str) -> dict:
    """The `setup` entry of a benchmark that runs the smoke scale's tiny model."""
    return {
        "model": "tiny Qwen3 (smoke scale), greedy",
        "max_new_tokens": max_new_tokens,
        "max_turns": max_turns,
        "sandbox": sandbox,
        "device": device,
    }
