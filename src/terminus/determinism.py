"""Same seed, same tables: the torch settings every stage that runs a model applies before it does.

- deterministic algorithms (on CPU every kernel torch uses here has one; on CUDA the few without one warn rather
  than fail, and `CUBLAS_WORKSPACE_CONFIG` makes cuBLAS reproducible);
- a fixed intra-op thread count (`TERMINUS_THREADS`, else torch's default for the machine): a CPU reduction
  splits its work by thread, so another count gives other rounding;
- the seed, where the stage samples (`transformers.set_seed`: Python, NumPy and torch).

What stays nondeterministic is named in docs/ARCHITECTURE.md ("Reproducibility"): vLLM's sampling and batching
on GPUs, and wall-clock text, which `terminus.timing` keeps out of what models read. What none of these settings
fixes is the machine: another CPU's kernels round otherwise, so results name it (`machine`, in `result_stamp` and
the JSON tables' stamps).
"""

from __future__ import annotations

import hashlib
import os
import platform
import re
from pathlib import Path

from terminus.config import git_commit

THREADS_VAR = "TERMINUS_THREADS"


def deterministic_torch(seed: int | None = None) -> dict:
    """Apply the settings; returns them (threads, seed) for the stage's records."""
    os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
    import torch

    threads = int(os.environ.get(THREADS_VAR) or torch.get_num_threads())
    torch.set_num_threads(threads)
    torch.use_deterministic_algorithms(True, warn_only=True)
    if seed is not None:
        from transformers import set_seed

        set_seed(seed)
    return {"threads": threads, "seed": seed}


# Environment variables that pin the CPU kernels torch, oneDNN and MKL choose: they change the rounding, so a stamp
# names the ones set (see docs/ARCHITECTURE.md, "Reproducibility", for what each moved on one machine).
KERNEL_PINS = ("ATEN_CPU_CAPABILITY", "ONEDNN_MAX_CPU_ISA", "MKL_CBWR", "MKL_ENABLE_INSTRUCTIONS", THREADS_VAR)


def _cpu() -> tuple[str, list[str]]:
    """The CPU's model name and flags (the first processor of /proc/cpuinfo; the platform's words elsewhere)."""
    try:
        first = Path("/proc/cpuinfo").read_text().split("\n\n")[0]
    except OSError:
        return platform.processor() or platform.machine(), []
    fields = {k.strip(): v.strip() for k, _, v in (line.partition(":") for line in first.splitlines())}
    return fields.get("model name") or platform.processor(), sorted(fields.get("flags", "").split())


def machine() -> dict:
    """What a float result depends on besides the code and the seed: the CPU (model, a hash of all its flags, the
    two that pick torch's vector kernels), the kernel libraries (torch, its BLAS and oneDNN, the kernels ATen
    dispatches to), the intra-op thread count and any kernel pin set. Two machines that differ here may round
    differently (SFT's first loss 7.951068 on one x86 machine, 7.951073 on another); results/cached's comparison
    prints both. Kept out of the config hash and of per-row columns: it is the JSON stamps' `machine`."""
    cpu, flags = _cpu()
    out = {
        "cpu": cpu,
        "flags_sha": hashlib.sha256(" ".join(flags).encode()).hexdigest()[:12],
        "avx2": "avx2" in flags,
        "avx512f": "avx512f" in flags,
        "torch": None,
        "blas": None,
        "onednn": None,
        "cpu_capability": None,
        "threads": int(os.environ.get(THREADS_VAR) or os.cpu_count() or 1),
        "pins": {k: os.environ[k] for k in KERNEL_PINS if os.environ.get(k)},
    }
    try:
        import torch
    except ImportError:
        return out
    shown = torch.__config__.show()
    mkl = re.search(r"Math Kernel Library Version ([\w.]+)", shown)
    blas = re.search(r"BLAS_INFO=(\w+)", shown)
    onednn = re.search(r"MKL-DNN v([\w.]+)", shown)
    out |= {
        "torch": torch.__version__,
        "blas": " ".join(x for x in (blas and blas.group(1), mkl and mkl.group(1)) if x) or None,
        "onednn": onednn and onednn.group(1),
        "cpu_capability": torch.backends.cpu.get_cpu_capability(),
        "threads": int(os.environ.get(THREADS_VAR) or torch.get_num_threads()),
    }
    return out


def result_stamp(config_hash: str | None = None, inputs: dict | None = None) -> dict:
    """The `stamp` object of a result file (results/benchmarks/*.json): the commit without its `-dirty` suffix,
    `dirty` apart (scripts/check_results.py fails on it), the config hash and the inputs' hashes where the result
    has them, and the machine."""
    commit = git_commit()
    return {
        "commit": commit.removesuffix("-dirty"),
        "dirty": commit.endswith("-dirty"),
        "config_hash": config_hash,
        "inputs": inputs or {},
        "machine": machine(),
    }
