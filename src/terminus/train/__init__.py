"""Training: the tiny model builder (and, with the training issue, SFT, GRPO and export)."""

from terminus.errors import TerminusError


class TrainingInputError(TerminusError, ValueError):
    """A training stage's inputs give it nothing to do, or a flag or recipe it cannot use."""
