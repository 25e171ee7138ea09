"""Same seed, same tables: the torch settings every stage that runs a model applies before it does.

- deterministic algorithms (on CPU every kernel torch uses here has one; on CUDA the few without one warn rather
  than fail, and `CUBLAS_WORKSPACE_CONFIG` makes cuBLAS reproducible);
- a fixed intra-op thread count (`TERMINUS_THREADS`, else torch's default for the machine): a CPU reduction
  splits its work by thread, so another count gives other rounding;
- the seed, where the stage samples (`transformers.set_seed`: Python, NumPy and torch).

What stays nondeterministic is named in docs/ARCHITECTURE.md ("Reproducibility"): vLLM's sampling and batching
on GPUs, and wall-clock text, which `terminus.timing` keeps out of what models read.
"""

from __future__ import annotations

import os

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
