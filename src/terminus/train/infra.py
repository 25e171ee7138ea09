"""GRPO never dies from one failure, and never learns from one.

An episode is *infra-failed* when something other than the policy failed under it: its sandbox did not start or
its task setup failed (`TaskStartError`), the sandbox or the sampling engine failed mid-episode (`SandboxError`,
`GenerationError`, an endpoint's `PolicyError`), or the judge call that scores it failed after its retries
(`JudgeError`). Such an episode says nothing about the policy, so it is dropped from its group, never scored 0.

Why the episode, not its whole group: the failure does not depend on what the policy sampled (a sandbox that
does not start, a judge that is down), so the group's other episodes are still a fair sample of the policy on that
prompt and their advantages, recomputed over them alone, are still unbiased; dropping the whole group would throw
away a step's signal for one broken start. A group left with fewer than 2 episodes has no baseline and is dropped.

How it is kept out of the loss (TRL 1.16's GRPOTrainer): the reward is None, which TRL turns into NaN, leaves out
of the group's nan-aware mean and std and gives advantage 0; and `mask_dropped` zeroes the sample's loss mask
(`tool_mask`, which TRL multiplies into the completion mask in the loss) and recomputes `num_items_in_batch`, so
that neither the policy term, the KL term, the entropy bonus nor the token normaliser sees it. An episode that
failed in the rollout is also replaced by a one-pad-token placeholder, so no forward pass is spent on it.

Each step logs `rollout/infra_failed_frac`, `rollout/skipped_frac`, `rollout/dropped_frac` (out of the loss for any
of these reasons), `judge/unparseable_frac` (the judge replied, unreadably) and `judge/fallback_frac` (the reward
is the fact checker's alone though an LLM judge is configured), each a share of the step's episodes and 0 without
an LLM judge; and stops the run with `InfraFailureError` when a share over the recipe's window passes its threshold.
A task that fails to start twice is skipped for the rest of the run and listed in <output_dir>/skipped_tasks.json.
"""

from __future__ import annotations

import json
import logging
from collections import Counter, deque
from pathlib import Path

from terminus.collect.runner import start_failed
from terminus.errors import TerminusError
from terminus.io import write_json_atomic
from terminus.judge.llm import JudgeError
from terminus.models.openai_compat import PolicyError

log = logging.getLogger(__name__)

# crash records whose error names one of these failed for want of a sandbox, a setup or an endpoint
INFRA_ERRORS = ("TaskStartError", "SandboxError", "GenerationError", "PolicyError")
SKIP_AFTER = 2  # failed starts of a task before it is skipped for the rest of the run
SKIPPED_FILE = "skipped_tasks.json"
FRACTIONS = ("rollout/infra_failed_frac", "judge/unparseable_frac", "judge/fallback_frac")


class InfraFailureError(TerminusError, RuntimeError):
    """Too many episodes failed for want of a judge or a sandbox: training stops rather than learn from the rest."""


def infra_failure(record: dict) -> str | None:
    """The error of an episode that failed for want of a sandbox, a setup or an endpoint; None for any other."""
    error = record.get("error") or ""
    if record.get("termination") == "crash" and error.split(":", 1)[0] in INFRA_ERRORS:
        return error
    return None


class TaskSkips:
    """Tasks that failed to start SKIP_AFTER times, skipped for the rest of the run and listed in the log and in
    <output_dir>/skipped_tasks.json (rewritten as the list grows)."""

    def __init__(self, output_dir: Path | str) -> None:
        self.path = Path(output_dir) / SKIPPED_FILE
        self.failures: Counter[str] = Counter()
        self._skipped: dict[str, str] | None = None  # task id -> its last start error; read at the first rollout

    @property
    def skipped(self) -> dict[str, str]:
        """The skipped tasks. Read from the file at first use, so after `train.run.resume_point` ran: a resumed run
        skips what the run before it skipped (those tasks still do not start), and a run of other inputs finds the
        file moved away with the old checkpoints."""
        if self._skipped is None:
            self._skipped = self._read()
        return self._skipped

    def _read(self) -> dict[str, str]:
        if self.path.is_file():
            try:
                skipped = dict(json.loads(self.path.read_text())["skipped"])
            except (ValueError, KeyError, TypeError) as err:
                raise TerminusError(f"{self.path}: not a skipped-task list ({err}); delete it to retry them") from err
            log.warning("resuming with %d tasks skipped (listed in %s)", len(skipped), self.path)
            return skipped
        return {}

    def __contains__(self, task_id: str) -> bool:
        return task_id in self.skipped

    def saw(self, task_id: str, record: dict) -> None:
        if not start_failed(record) or task_id in self.skipped:
            return
        self.failures[task_id] += 1
        if self.failures[task_id] >= SKIP_AFTER:
            if self.path.is_file():  # under DDP other ranks skip tasks too, into the same file: keep theirs
                theirs = json.loads(self.path.read_text()).get("skipped", {})
                self.skipped.update({k: v for k, v in theirs.items() if k not in self.skipped})
            self.skipped[task_id] = record["error"]
            log.warning("task %s failed to start %d times: skipped for the rest of the run (%s)", task_id,
                        self.failures[task_id], record["error"])  # fmt: skip
            write_json_atomic(self.path, {"skip_after_failed_starts": SKIP_AFTER, "skipped": self.skipped})


class InfraGuard:
    """One step's failures (set by the rollout and the reward), what they drop from the loss, the step's metrics,
    and the thresholds over the last `window` steps."""

    def __init__(self, num_generations: int, thresholds: dict[str, float], window: int) -> None:
        self.num_generations, self.thresholds, self.window = num_generations, thresholds, max(1, window)
        self.history: deque[dict[str, float]] = deque(maxlen=self.window)
        self.begin([])

    def begin(self, failures: list[str | None]) -> None:
        """A step's rollout: each sample's infra failure (`skipped: ...` for a skipped task's), None if it ran."""
        self.failures = list(failures)
        self.judge_failed = [False] * len(failures)
        self.unparseable = [False] * len(failures)
        self.fallback = [False] * len(failures)
        self.small_group = [False] * len(failures)

    def live(self, i: int) -> bool:
        return self.failures[i] is None and not self.judge_failed[i]

    def groups(self) -> list[range]:
        n, g = len(self.failures), self.num_generations
        return [range(start, min(start + g, n)) for start in range(0, n, g)]

    def drop_small_groups(self, rewards: list[float | None]) -> list[float | None]:
        """A group with fewer than 2 scored episodes has no baseline: all of it out (reward None)."""
        for group in self.groups():
            if sum(rewards[i] is not None for i in group) < 2:
                for i in group:
                    self.small_group[i] = rewards[i] is not None
                    rewards[i] = None
        return rewards

    def dropped(self) -> list[bool]:
        return [not self.live(i) or self.small_group[i] for i in range(len(self.failures))]

    def finish(self, metrics: dict[str, list[float]], step: int, mean_over_ranks=None) -> None:
        """Log the step's shares into the trainer's metrics; raise InfraFailureError past a threshold. Under DDP
        `mean_over_ranks` averages the shares over the ranks (each rolls out as many episodes), so every rank
        stops at the same step, or none (one rank stopping alone would leave the others waiting)."""
        n = max(1, len(self.failures))
        skipped = sum(bool(f and f.startswith("skipped")) for f in self.failures)
        failed = sum(bool(f) for f in self.failures) - skipped + sum(self.judge_failed)
        shares = {
            "rollout/infra_failed_frac": failed / n,
            "rollout/skipped_frac": skipped / n,
            "rollout/dropped_frac": sum(self.dropped()) / n,
            "judge/unparseable_frac": sum(self.unparseable) / n,
            "judge/fallback_frac": sum(self.fallback) / n,
        }
        if mean_over_ranks is not None:
            shares = dict(zip(shares, mean_over_ranks(list(shares.values())), strict=True))
        for key, value in shares.items():
            metrics[key].append(value)
        self.history.append(shares)
        if len(self.history) < self.window:
            return
        for key in FRACTIONS:
            mean = sum(h[key] for h in self.history) / len(self.history)
            limit = self.thresholds.get(key)
            if limit is not None and mean > limit:
                errors = Counter(f for f in self.failures if f and not f.startswith("skipped")).most_common(1)
                example = f"; this step's most common: {errors[0][0]!r} ({errors[0][1]}x)" if errors else ""
                raise InfraFailureError(
                    f"GRPO stopped at step {step + 1}: {key} averaged {mean:.2f} over the last {self.window} steps, "
                    f"over its threshold {limit} (the recipe's max_{key.split('/')[1]}, failure_window){example}. "
                    "Fix the judge endpoint or the sandbox and resume from the last checkpoint."
                )


class GuardedReward:
    """A reward function as TRL calls it, that scores only the episodes that ran: None for infra-failed ones and
    for groups left with fewer than 2. With `scorer` (the Scorer), each verdict also says whether the judge's reply
    was unparseable or fell back to the fact checker, and a judge call that fails after its retries fails that
    group's episodes alone (the batch is scored at once first; only when the judge fails is it scored group by
    group, the calls that succeeded coming back from the judge's cache)."""

    def __init__(self, func, guard: InfraGuard, scorer=None) -> None:
        self.func, self.guard, self.scorer = func, guard, scorer
        self.__name__ = getattr(func, "__name__", type(func).__name__)  # TRL logs rewards/<name>/...

    def __call__(self, prompts=None, completions=None, **kwargs) -> list[float | None]:
        guard = self.guard
        n = len(completions)
        if len(guard.failures) != n:  # called outside a guarded rollout (no failures known): all ran
            guard.begin([None] * n)
        rewards: list[float | None] = [None] * n
        live = [i for i in range(n) if guard.live(i)]
        if self.scorer is not None:
            self._score(kwargs["trajectory"], live, rewards)
        elif live:
            out = self.func(prompts=prompts, completions=completions, **kwargs)
            for i in live:
                rewards[i] = out[i]
        return guard.drop_small_groups(rewards)

    def _score(self, trajectories: list[dict], live: list[int], rewards: list[float | None]) -> None:
        try:
            parts = [(live, self.scorer.score([trajectories[i] for i in live]))] if live else []
        except (JudgeError, PolicyError) as err:
            log.warning("the judge failed (%s): scoring this step group by group", err)
            parts = []
            for group in self.guard.groups():
                members = [i for i in group if i in live]
                try:
                    parts.append((members, self.scorer.score([trajectories[i] for i in members])))
                except (JudgeError, PolicyError) as group_err:
                    log.warning("the judge failed for %d episodes: out of the loss (%s)", len(members), group_err)
                    for i in members:
                        self.guard.judge_failed[i] = True
        weighs = self.scorer.judge is not None and self.scorer.config.judge > 0
        for members, verdicts in parts:
            for i, verdict in zip(members, verdicts, strict=True):
                rewards[i] = verdict["reward"]
                self.guard.unparseable[i] = bool(verdict.get("judge_unparseable"))
                self.guard.fallback[i] = weighs and verdict.get("judge_score") is None


def mask_dropped(output: dict, dropped: list[bool], accelerator) -> None:
    """Take the dropped samples out of the loss: advantage 0 and a zero loss mask, and TRL's token count
    (`num_items_in_batch`, the dapo normaliser) recounted without them. Under DDP the recount gathers from every
    rank, so whether any rank dropped one is gathered first: all ranks take the same branch (one rank gathering
    alone would wait forever)."""
    import torch

    drops = any(dropped)
    if accelerator.num_processes > 1:
        flag = torch.tensor([int(drops)], device=output["completion_mask"].device)
        drops = bool(accelerator.gather(flag).any())
    if not drops:
        return

    keep = torch.tensor([not d for d in dropped], device=output["completion_mask"].device)
    key = "tool_mask" if "tool_mask" in output else "completion_mask"
    output[key] = output[key] * keep.unsqueeze(1).to(output[key].dtype)
    output["advantages"] = output["advantages"] * keep.to(output["advantages"].dtype)
    mask = output["completion_mask"] * output.get("tool_mask", 1)
    output["num_items_in_batch"] = accelerator.gather(mask.sum()).sum()
