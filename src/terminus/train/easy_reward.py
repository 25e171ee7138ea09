"""Does the GRPO wiring learn at all? GRPO's own main, rollout function, masks and template with an easy reward in
place of the Scorer: the fewer commands before the final answer the better (1 after one command, 0.5 after two,
0 after three or more, or without an answer), and 0 for answering without running anything. The policy's own
samples differ on it in most groups (an SFT model runs one to three commands), it depends only on tokens the model
generates (when to answer), and it cannot be met by running nothing. If it does not rise, the wiring is broken
(masks, sampled ids, advantages, the optimizer step); if it rises and the Scorer's reward does not, the task is
hard for the model. Turns are reported beside it, so that what the policy gave up to meet it stays visible."""

from __future__ import annotations

import json
import statistics
from pathlib import Path


def fewer_commands(completions: list, trajectory: list[dict], **_) -> list[float]:
    """TRL's reward signature; the rollout passes each episode's record as `trajectory`."""

    def reward(t: dict) -> float:
        commands = len(t["turns"])
        return max(0.0, 1.0 - (commands - 1) / 2) if t["termination"] == "final_answer" and commands else 0.0

    return [reward(t) for t in trajectory]


def curve(metrics: Path) -> list[dict]:
    rows = [json.loads(x) for x in Path(metrics).read_text().splitlines() if x.strip()]
    return [r for r in rows if "reward" in r]


def summarise(steps: list[dict], margin: float) -> dict:
    """Windows of a quarter of the steps (at least one step): the first, the last, and the best. The check passes
    when the best window's reward is `margin` above the first's: the wiring moved the policy where the reward
    pointed. The last window and the turns say whether it stayed there: an easy reward invites a collapse (here,
    answering before running anything, which pays 0), and a collapse after learning is the reward's fault, not
    the wiring's."""
    if len(steps) < 2:
        raise ValueError(f"the easy-reward check needs at least 2 logged steps, not {len(steps)}")
    k = max(1, len(steps) // 4)

    def mean(rows: list[dict], key: str) -> float:
        return round(statistics.fmean(r[key] for r in rows), 4)

    windows = [steps[i : i + k] for i in range(len(steps) - k + 1)]
    best = max(windows, key=lambda w: mean(w, "reward"))
    first = mean(steps[:k], "reward")
    return {
        "steps": len(steps),
        "first": first,
        "last": mean(steps[-k:], "reward"),
        "best": mean(best, "reward"),
        "best_from_step": steps.index(best[0]) + 1,
        "window": k,
        "margin": margin,
        "passed": mean(best, "reward") - first >= margin,
        "turns_first": mean(steps[:k], "episode/turns"),
        "turns_best": mean(best, "episode/turns"),
        "turns_last": mean(steps[-k:], "episode/turns"),
        "final_answer_last": mean(steps[-k:], "episode/final_answer"),
        "rewards": [round(r["reward"], 4) for r in steps],
        "turns": [round(r["episode/turns"], 4) for r in steps],
    }


def easy_reward_check(argv: list[str], margin: float) -> dict:
    """Run `terminus grpo` with these recipe arguments and the easy reward; summarise its metrics."""
    from terminus.train import grpo

    script_args, training_args, model_args = grpo.parse(argv)
    grpo.main(script_args, training_args, model_args, reward_funcs=[fewer_commands])
    return summarise(curve(Path(training_args.output_dir) / "metrics.jsonl"), margin)
