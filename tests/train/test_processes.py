"""GRPO under several training processes (DDP): allowed where every rank calls its own engine with no collective
(vLLM colocated at tensor parallelism 1, or transformers generation), refused in one line where a rollout's
collectives would wait for ranks whose lockstep episodes ended sooner (server mode, tensor parallelism > 1) or
where each rank would sample its own choice (task selection, before/after measurement)."""

from __future__ import annotations

import pytest

from terminus.config import ROOT
from terminus.train import TrainingInputError

TWO = {"WORLD_SIZE": "2"}


def parsed(tmp_path, *flags: str):
    from terminus.train.grpo import parse

    return parse(["--config", str(ROOT / "configs/grpo/tiny.yaml"), "--output_dir", str(tmp_path / "g"), *flags])


@pytest.mark.parametrize(
    ("flags", "reason"),
    [
        (("--use_vllm", "true", "--vllm_mode", "server"), "vllm_mode 'server'"),
        (("--use_vllm", "true", "--vllm_tensor_parallel_size", "2"), "vllm_tensor_parallel_size 2"),
        (("--spread_candidates", "4", "--max_tasks", "2"), "spread_candidates"),
        (("--before_after_samples", "2"), "before_after_samples"),
    ],
)
def test_collectives_across_ranks_are_refused_in_one_line(tmp_path, flags, reason):
    from terminus.train.grpo import check_processes

    script_args, training_args, _ = parsed(tmp_path, *flags)
    check_processes(script_args, training_args, {})  # one process: anything goes
    with pytest.raises(TrainingInputError) as err:
        check_processes(script_args, training_args, TWO)
    assert reason in str(err.value) and "2 processes (WORLD_SIZE)" in str(err.value)
    assert "\n" not in str(err.value)


@pytest.mark.parametrize("flags", [(), ("--use_vllm", "true", "--vllm_mode", "colocate")])
def test_ranks_with_their_own_engine_pass(tmp_path, flags):
    from terminus.train.grpo import check_processes

    script_args, training_args, _ = parsed(tmp_path, *flags)
    check_processes(script_args, training_args, TWO)
