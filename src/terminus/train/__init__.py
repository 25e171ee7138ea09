"""Training: the tiny model builder (and, with the training issue, SFT, GRPO and export)."""
