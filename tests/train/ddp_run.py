"""One rank of a DDP run for tests/train/test_ddp.py, started by `accelerate launch`: `python ddp_run.py
sft|grpo DIGESTS_DIR RECIPE_ARGS...` trains through the stage's own parser and main, and every rank appends a
digest of its model's weights after each optimizer step (and before the first) to DIGESTS_DIR/rank<N>.jsonl.
GRPO rewards the characters the policy writes (`easy_reward.shorter`): its samples always differ, so a random tiny
model gets a gradient."""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

from transformers import TrainerCallback

from terminus.train import grpo, run, sft


class WeightDigests(TrainerCallback):
    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def write(self, state, model) -> None:
        digest = hashlib.sha256()
        for name, param in sorted(model.named_parameters()):
            digest.update(name.encode())
            digest.update(param.detach().cpu().contiguous().numpy().tobytes())
        import torch.distributed as dist

        with (self.folder / f"rank{dist.get_rank()}.jsonl").open("a") as f:
            f.write(json.dumps({"step": state.global_step, "digest": digest.hexdigest()}) + "\n")

    def on_train_begin(self, args, state, control, model=None, **kwargs):
        self.write(state, model)

    def on_step_end(self, args, state, control, model=None, **kwargs):
        self.write(state, model)


def main(stage: str, folder: str, argv: list[str]) -> None:
    train_and_save = run.train_and_save

    def with_digests(trainer, *args, **kwargs):
        trainer.add_callback(WeightDigests(Path(folder)))
        return train_and_save(trainer, *args, **kwargs)

    module = sft if stage == "sft" else grpo
    module.train_and_save = with_digests  # the stage's own main, with the digest callback on its trainer
    if stage == "sft":
        sft.main(*sft.parse(argv))
    else:
        from terminus.train.easy_reward import shorter

        grpo.main(*grpo.parse(argv), reward_funcs=[shorter])


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3:])
