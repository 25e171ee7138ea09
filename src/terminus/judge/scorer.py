"""One Scorer for GRPO rewards and for evaluation: the LLM judge (when an endpoint is configured) plus the
deterministic fact checker, combined into a reward in [0, 1] with the weights of configs/judge/scorer.yaml."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

from pydantic import ValidationError

from terminus.agent.parsing import parse_final_answer
from terminus.config import ROOT, ConfigError, load_yaml, problems
from terminus.errors import TerminusError
from terminus.judge.facts import answer_text, check
from terminus.judge.llm import JudgeResult, LLMJudge
from terminus.judge.rubric import Rubric, load_rubric
from terminus.judge.runs import names, observations_of
from terminus.settings.scorer import ScorerFile

DEFAULT_SCORER = ROOT / "configs" / "judge" / "scorer.yaml"
SCHEMA = "terminus.verdict/1"
FORM_ALONE = 0.1  # the most an answer earns by its form alone, whatever format_weight is


class ScorerConfigError(TerminusError, ValueError):
    pass


@dataclass(frozen=True)
class ScorerConfig:
    """The Scorer's weights and penalties, flat; read from a scorer file (`load`), whose typed model
    (`terminus.settings.scorer.ScorerFile`) holds each default once and refuses a key it does not know."""

    judge: float
    fact_recall: float
    fact_precision: float
    hallucination_penalty: float
    max_hallucinations: int
    coverage_penalty: float
    length_max_ratio: float
    length_penalty: float
    format_weight: float
    unsupported_penalty: float
    judge_retries: int

    @classmethod
    def load(cls, path: Path | str | None = None) -> ScorerConfig:
        path = Path(path or DEFAULT_SCORER)
        try:
            raw = load_yaml(path, "scorer config") or {}
        except ConfigError as err:
            raise ScorerConfigError(str(err)) from None
        if not isinstance(raw, dict):
            raise ScorerConfigError(f"scorer config {path} is not a mapping of settings")
        try:
            file = ScorerFile.model_validate(raw)
        except ValidationError as err:
            raise ScorerConfigError(f"{path}: " + "; ".join(problems(err))) from None
        w, length = file.weights, file.length
        return cls(
            judge=w.judge,
            fact_recall=w.fact_recall,
            fact_precision=w.fact_precision,
            hallucination_penalty=file.hallucination_penalty,
            max_hallucinations=file.max_hallucinations,
            coverage_penalty=file.coverage_penalty,
            length_max_ratio=length.max_ratio,
            length_penalty=length.penalty,
            format_weight=file.format_weight,
            unsupported_penalty=file.unsupported_penalty,
            judge_retries=file.judge_retries,
        )


def trajectory_from_completion(completion, task_id: str | None = None) -> dict:
    """A minimal trajectory from a TRL completion (text, or the list of messages of a multi-turn rollout)."""
    messages = completion if isinstance(completion, list) else [{"role": "assistant", "content": str(completion)}]
    turns, pending = [], None
    for m in messages:
        if m.get("role") == "assistant" and m.get("tool_calls"):
            pending = m["tool_calls"][0].get("function", {}).get("arguments")
        elif m.get("role") == "tool":
            turns.append({"command": str(pending), "timed_out": False})
    last = next((m.get("content") or "" for m in reversed(messages) if m.get("role") == "assistant"), "")
    answer = parse_final_answer(last)
    return {
        "id": task_id or "completion",
        "task_id": task_id,
        "messages": messages,
        "turns": turns,
        "final_answer": answer,
        "termination": "final_answer" if answer is not None else "turn_limit",
        "notes": [],
    }


class Scorer:
    """Scores trajectories of tasks; `judge=None` gives the fact checker's reward alone (said in each verdict).

    >>> from terminus.tasks.record import Task
    >>> task = Task(id="t", language="python", source="synthetic", repo="r", task_type="test-execution",
    ...             query="run the tests", facts={"tests": {"passed": 3, "failed": 0, "failing": []}})
    >>> scorer = Scorer(tasks={"t": task})
    >>> good = [{"role": "assistant", "content": "", "tool_calls": [{"function": {"name": "run_in_terminal",
    ...          "arguments": '{"command": "pytest"}'}}]},
    ...         {"role": "tool", "content": "3 passed in 0.1s\\n[exit code 0]"},
    ...         {"role": "assistant",
    ...          "content": "<final_answer>\\nCommand: pytest\\nSummary: 3 passed.\\n</final_answer>"}]
    >>> scorer([good, "no answer"], task_id=["t", "t"])
    [1.0, 0.0]
    """

    __name__ = "terminus_reward"  # TRL logs reward functions by name

    def __init__(
        self,
        tasks: dict | None = None,
        judge: LLMJudge | None = None,
        config: ScorerConfig | None = None,
        rubric: Rubric | None = None,
        references: dict[str, dict] | None = None,
        group: bool = False,
    ) -> None:
        self.tasks = tasks or {}
        self.judge = judge
        self.config = config or ScorerConfig.load()
        self.rubric = rubric or (judge.rubric if judge else load_rubric())
        self.references = references or {}
        self.group = group

    # -- the deterministic part ------------------------------------------------------------------------
    def verdict(self, trajectory: dict, judged: JudgeResult | None = None) -> dict:
        task = self.tasks.get(trajectory.get("task_id"))
        if task is None:
            raise KeyError(f"no task {trajectory.get('task_id')!r} for trajectory {trajectory.get('id')!r}")
        answer = trajectory.get("final_answer")
        observed = observations_of(trajectory.get("messages", []))
        fc = check(answer, task.facts, task.task_type, observed)
        c = self.config
        use_judge = judged is not None and not judged.unparseable and c.judge > 0
        # Precision pays nothing without recall: one true trivial claim ("the build succeeded") and no required fact
        # was a third of the reward, and GRPO found it.
        # The LLM judge's score is gated the same way: a judge persuaded by copied facts or confident prose must not
        # pay for an answer whose facts no command printed (with the paper's judge weight, it paid 0.4 of the reward).
        grounded = fc.recall > 0
        parts = [(c.fact_recall, fc.recall), (c.fact_precision, fc.precision if grounded else 0.0)]
        if use_judge:
            parts.append((c.judge, judged.score if grounded else 0.0))
        weight = sum(w for w, _ in parts) or 1.0
        base = sum(w * v for w, v in parts) / weight
        hallucination = (
            c.hallucination_penalty * min(len(fc.hallucinated), c.max_hallucinations) / max(c.max_hallucinations, 1)
        )
        # Coverage: the share of the commands run that a pair of the answer names (by what it runs).
        runs = observed.runs
        named = sum(any(names(e.get("command") or "", r.command) for e in answer or []) for r in runs)
        coverage = named / len(runs) if runs else 1.0
        reference = self.references.get(task.id)
        length_ratio = None
        if reference and reference.get("final_answer") and answer:
            length_ratio = len(answer_text(answer)) / max(1, len(answer_text(reference["final_answer"])))
        over = 0.0 if length_ratio is None else max(0.0, length_ratio - c.length_max_ratio) / c.length_max_ratio
        penalty = (
            hallucination
            + c.coverage_penalty * (1 - coverage)
            + c.length_penalty * min(1.0, over)
            + c.unsupported_penalty * fc.unsupported
        )
        # No command run: nothing the answer says was seen, whatever it says (an answer at once once earned 0.83).
        content = 0.0 if not answer or not runs else min(1.0, max(0.0, base - penalty))
        # Form: half for a parsed final answer, half for having run commands through well-formed tool calls. A
        # small weight, so that a model that cannot yet state facts still sees which rollouts were closer; both
        # halves, because an answer given without running anything is no use to the main agent (with the answer
        # alone rewarded, GRPO taught the tiny model to answer at once).
        # An answer with no command behind it earns no form at all: at 0.05 it was as good as most real attempts of
        # a tiny model, and GRPO collapsed onto it. Form alone never lifts an answer above FORM_ALONE.
        commands = len(trajectory.get("turns") or [])
        errors = int(trajectory.get("format_errors") or 0)
        form = (0.5 * (answer is not None) + 0.5 * commands / (commands + errors)) if commands and runs else 0.0
        reward = (1 - c.format_weight) * content + c.format_weight * form
        if content == 0.0:
            reward = min(reward, FORM_ALONE)
        if fc.unusable:  # markup or an empty summary where the main agent reads the answer: no use to it at all
            reward = 0.0
        return {
            "schema": SCHEMA,
            "trajectory_id": trajectory.get("id"),
            "task_id": task.id,
            "dimensions": {}
            if not use_judge
            else {n: {"score": judged.scores[n], "reason": judged.reasons.get(n, "")} for n in judged.scores},
            "judge_score": judged.score if use_judge else None,
            "judge_unparseable": bool(judged and judged.unparseable),
            "fact_precision": round(fc.precision, 4),
            "fact_recall": round(fc.recall, 4),
            "hallucinated": fc.hallucinated,
            "unsupported": fc.unsupported,
            "unusable": fc.unusable,
            "missing": fc.missing,
            "wrong": fc.wrong,
            "coverage": round(coverage, 4),
            "length_ratio": None if length_ratio is None else round(length_ratio, 3),
            "form": round(form, 4),
            "reward": round(reward, 4),
            "judge": self.judge.identity if self.judge else None,
        }

    # -- batches -----------------------------------------------------------------------------------------
    def score(self, trajectories: list[dict]) -> list[dict]:
        judged: list[JudgeResult | None] = [None] * len(trajectories)
        if self.judge is not None:
            if self.group:
                groups: dict[str, list[int]] = defaultdict(list)
                for i, t in enumerate(trajectories):
                    groups[t.get("task_id")].append(i)
                asked = [
                    (self.tasks[task_id].query, self.references.get(task_id), [trajectories[i] for i in members])
                    for task_id, members in groups.items()
                ]  # the groups judged concurrently (a GRPO step's 4 groups at once), each in its members' order
                for members, results in zip(groups.values(), self.judge.score_groups(asked), strict=True):
                    for i, r in zip(members, results, strict=True):
                        judged[i] = r
            else:
                items = [(self.tasks[t["task_id"]].query, self.references.get(t["task_id"]), t) for t in trajectories]
                judged = self.judge.score_many(items)
        return [self.verdict(t, j) for t, j in zip(trajectories, judged, strict=True)]

    def __call__(self, completions: list, **kwargs) -> list[float]:
        """TRL's reward signature. Pass `trajectory` (full records) or `task_id` (with the completions)."""
        trajectories = kwargs.get("trajectory")
        if trajectories is None:
            ids = kwargs.get("task_id") or [None] * len(completions)
            trajectories = [trajectory_from_completion(c, i) for c, i in zip(completions, ids, strict=True)]
        return [v["reward"] for v in self.score(list(trajectories))]
