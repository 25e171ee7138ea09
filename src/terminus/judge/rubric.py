"""The rubric file (configs/judge/rubric.yaml): dimensions, scales, weights, levels; checked on load."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

from terminus.config import ROOT, ConfigError, load_yaml
from terminus.errors import TerminusError

DEFAULT_RUBRIC = ROOT / "configs" / "judge" / "rubric.yaml"
QUALITY = ("faithfulness", "completeness", "conciseness", "actionability", "efficiency")
FAILURES = (
    "hallucination",
    "no_final_answer",
    "repeated_commands",
    "ignored_timeout",
    "out_of_scope",
    "ignored_restriction",
    "format_violation",
)


class RubricError(TerminusError, ValueError):
    pass


@dataclass(frozen=True)
class Dimension:
    name: str
    kind: str  # quality | failure
    weight: float
    scale: tuple[int, int]
    description: str
    levels: dict

    def normalise(self, score: float) -> float:
        lo, hi = self.scale
        return (min(max(score, lo), hi) - lo) / (hi - lo)


@dataclass(frozen=True)
class Rubric:
    dimensions: dict[str, Dimension]
    digest: str
    path: str

    @property
    def quality(self) -> list[Dimension]:
        return [d for d in self.dimensions.values() if d.kind == "quality"]

    @property
    def failures(self) -> list[Dimension]:
        return [d for d in self.dimensions.values() if d.kind == "failure"]

    def combine(self, scores: dict[str, float]) -> float:
        """Quality earns, failures subtract; both normalised by the quality weights; clipped to [0, 1]."""
        total = sum(d.weight for d in self.quality) or 1.0
        earned = sum(d.weight * d.normalise(scores[d.name]) for d in self.quality if d.name in scores)
        lost = sum(d.weight * d.normalise(scores[d.name]) for d in self.failures if d.name in scores)
        return min(1.0, max(0.0, (earned - lost) / total))

    def for_prompt(self) -> dict:
        return {
            n: {"kind": d.kind, "scale": list(d.scale), "description": d.description, "levels": d.levels}
            for n, d in self.dimensions.items()
        }


def load_rubric(path: Path | str | None = None) -> Rubric:
    path = Path(path or DEFAULT_RUBRIC)
    try:
        raw = load_yaml(path, "rubric")
    except ConfigError as err:
        raise RubricError(str(err)) from None
    if (
        not isinstance(raw, dict)
        or not isinstance(raw.get("quality"), dict)
        or not isinstance(raw.get("failures"), dict)
    ):
        raise RubricError(f"rubric {path}: needs the mappings `quality` and `failures`")
    dims: dict[str, Dimension] = {}
    for kind, section, known in (("quality", "quality", QUALITY), ("failure", "failures", FAILURES)):
        for name, spec in raw[section].items():
            if name not in known:
                raise RubricError(
                    f"rubric {path}: unknown {kind} dimension {name!r} under `{section}` (known: {', '.join(known)})"
                )
            if not isinstance(spec, dict):
                raise RubricError(f"rubric {path}: dimension {name!r} must be a mapping")
            if "weight" not in spec:
                raise RubricError(f"rubric {path}: dimension {name!r} has no weight")
            weight = spec["weight"]
            if not isinstance(weight, int | float) or isinstance(weight, bool) or weight < 0:
                raise RubricError(f"rubric {path}: dimension {name!r}: weight must be a number >= 0, not {weight!r}")
            scale = spec.get("scale")
            if not (
                isinstance(scale, list)
                and len(scale) == 2
                and all(isinstance(v, int) for v in scale)
                and scale[0] < scale[1]
            ):
                raise RubricError(f"rubric {path}: dimension {name!r}: scale must be [low, high] integers, low < high")
            if not spec.get("description") or not isinstance(spec.get("levels"), dict) or not spec["levels"]:
                raise RubricError(f"rubric {path}: dimension {name!r} needs a description and its levels")
            dims[name] = Dimension(
                name,
                kind,
                float(weight),
                (scale[0], scale[1]),
                spec["description"],
                {int(k): str(v) for k, v in spec["levels"].items()},
            )
    if not any(d.kind == "quality" and d.weight > 0 for d in dims.values()):
        raise RubricError(f"rubric {path}: at least one quality dimension needs a positive weight")
    digest = hashlib.sha256(path.read_bytes()).hexdigest()[:12]
    return Rubric(dims, digest, str(path))
