"""The scorer config file (configs/judge/scorer.yaml): how the Scorer combines the LLM judge and the fact checker.
Each key's default once, here; a key this model does not know is an error naming it (a misspelt penalty used to be
ignored, its default silently used). `terminus.judge.scorer.ScorerConfig.load` reads a file through it."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

Weight = Annotated[float, Field(ge=0)]


class ScorerSection(BaseModel):
    """Frozen, unknown keys refused, numbers as numbers (strict: "0.4" is no weight); a key written as null takes
    its default, as the scorer has always read it."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    @model_validator(mode="before")
    @classmethod
    def _null_is_default(cls, data: Any) -> Any:
        return {k: v for k, v in data.items() if v is not None} if isinstance(data, dict) else data


class ScorerWeights(ScorerSection):
    """reward = w_judge x judge + w_recall x fact_recall + w_precision x fact_precision, renormalised to sum to 1
    (w_judge is 0 without an LLM judge)."""

    judge: Weight = Field(0.4, description="The LLM judge's score.")
    fact_recall: Weight = Field(0.4, description="Share of the task's facts the answer states, grounded.")
    fact_precision: Weight = Field(0.2, description="Share of the answer's claims that are facts (with recall only).")


class LengthPenalty(ScorerSection):
    """An answer more than max_ratio times as long as the reference's costs up to `penalty`."""

    max_ratio: float = Field(2.0, description="Length over the reference's before the penalty starts.")
    penalty: float = Field(0.3, description="The most the length penalty takes.")


class ScorerFile(ScorerSection):
    """configs/judge/scorer.yaml's keys."""

    weights: ScorerWeights = Field(default_factory=ScorerWeights)
    hallucination_penalty: float = Field(0.5, description="Times the share of hallucinated claims (capped).")
    max_hallucinations: int = Field(3, description="Hallucinated claims counted at most.")
    coverage_penalty: float = Field(0.3, description="Times the share of commands no Command/Summary pair names.")
    length: LengthPenalty = Field(default_factory=LengthPenalty)
    format_weight: Annotated[float, Field(ge=0, le=1)] = Field(
        0.1, description="reward = (1 - format_weight) x content + format_weight x form."
    )
    unsupported_penalty: float = Field(0.3, description="Times the share of text no output supports.")
    judge_retries: int = Field(2, description="Tries of a judge reply that cannot be parsed.")
