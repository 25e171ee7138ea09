"""Does the GRPO wiring learn at all? One step of GRPO's own main, rollout function, masks, template and optimizer
with a reward the policy's samples always differ on and that depends only on what it generates: the characters it
writes, counted `shorter` (fewer pays more) and, in a second run, `longer`. The step's own samples are then scored
under the policy before and after the step, and the reward the updated policy would get on them is estimated by
importance weighting (self-normalised: each sample weighted by exp(log p_after - log p_before) of the tokens it
generated, at the sampling temperature), and the changes are correlated with the rewards. With the wiring right,
the estimate rises and the correlation is high in both directions; a step that ignores the reward (no update,
advantages on the wrong samples or tokens, the sign turned) fails at least one.

Why not a reward curve over many steps: on the tiny models the curve cannot tell learning from drift. Measured on
the test suite's briefly trained model (12-16 steps, 4 rollouts a step): every update, whatever the reward,
moved the policy the same way, toward broken tool calls and answering without commands (a seeded coin-flip reward
took "fewer commands before the answer" from 0.59 to 0.81 in its second epoch, more than that reward itself did,
and a reward for two or more commands fell to 0 after one step). One step measured on its own samples has no
sampling noise and is deterministic for a seed."""

from __future__ import annotations

import math
import statistics
from pathlib import Path


def generated_chars(trajectory: list[dict]) -> list[int]:
    """Characters the policy wrote in each episode: its replies, nothing the terminal printed."""
    return [sum(len(m.get("content") or "") for m in t["messages"] if m["role"] == "assistant") for t in trajectory]


def shorter(completions: list, trajectory: list[dict], **_) -> list[float]:
    """TRL's reward signature; the rollout passes each episode's record as `trajectory`."""
    return [-n / 1000 for n in generated_chars(trajectory)]


def longer(completions: list, trajectory: list[dict], **_) -> list[float]:
    return [n / 1000 for n in generated_chars(trajectory)]


REWARDS = {"shorter": shorter, "longer": longer}


def sequence_logprobs(model_path: str | Path, samples: dict, temperature: float) -> list[float]:
    """Log-probability of each sample's generated tokens (its loss mask) under the model, logits divided by the
    sampling temperature as GRPO's loss divides them."""
    import torch
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(model_path, dtype=torch.float32).eval()
    out = []
    with torch.no_grad():
        for prompt, completion, mask in zip(samples["prompt_ids"], samples["completion_ids"], samples["env_mask"],
                                            strict=True):  # fmt: skip
            ids = torch.tensor([list(prompt) + list(completion)])
            logits = model(ids).logits[0, len(prompt) - 1 : -1].float() / temperature
            logp = torch.log_softmax(logits, dim=-1).gather(1, torch.tensor(list(completion))[:, None])[:, 0]
            out.append(float((logp * torch.tensor(mask, dtype=logp.dtype)).sum()))
    return out


def measure_step(rewards: list[float], before: list[float], after: list[float]) -> dict:
    """The group's rewards scaled to its range (0 the worst sample, 1 the best); their mean (`first`); the
    self-normalised importance-weighted estimate of the updated policy's reward on the same samples (`last`); and the
    correlation of the step's log-probability changes with the rewards. One step on the tiny models moves a
    sample's log-probability by tens of nats, so the estimate saturates on whichever sample moved most: the
    correlation says whether the step moved the samples in the reward's order."""
    low, high = min(rewards), max(rewards)
    if high == low:
        raise ValueError(f"the step's samples all got reward {low}: no advantage, nothing to measure")
    scaled = [(r - low) / (high - low) for r in rewards]
    delta = [a - b for a, b in zip(after, before, strict=True)]
    top = max(delta)
    weights = [math.exp(d - top) for d in delta]
    last = sum(w * s for w, s in zip(weights, scaled, strict=True)) / sum(weights)
    first = statistics.fmean(scaled)
    moved = statistics.pstdev(delta) > 0
    correlation = statistics.correlation(scaled, delta) if moved else 0.0
    return {"first": round(first, 4), "last": round(last, 4), "rise": round(last - first, 4),
            "correlation": round(correlation, 4), "rewards": [round(r, 4) for r in rewards],
            "logp_change": [round(d, 4) for d in delta]}  # fmt: skip


def easy_reward_check(argv: list[str], out: Path, margin: float) -> dict:
    """One GRPO step per direction (`terminus grpo` with these recipe arguments, into out/<direction>), each
    measured on its own samples. Passes when, in both directions, the estimated reward rises and the log-probability
    changes correlate with the rewards by at least `margin` (Pearson's r over the group)."""
    from terminus.train import grpo

    runs = {}
    for direction, reward in REWARDS.items():
        samples: list[dict] = []
        script_args, training_args, model_args = grpo.parse(
            [*argv, "--output_dir", str(out / direction), "--max_steps", "1"]
        )
        summary = grpo.main(script_args, training_args, model_args, reward_funcs=[reward], observe=samples.append)
        step = samples[0]
        temperature = training_args.temperature
        before = sequence_logprobs(model_args.model_name_or_path, step, temperature)
        after = sequence_logprobs(summary["model"], step, temperature)
        runs[direction] = measure_step(reward(None, trajectory=step["trajectory"]), before, after)
        runs[direction]["passed"] = runs[direction]["rise"] > 0 and runs[direction]["correlation"] >= margin
    first = sum(r["first"] for r in runs.values()) / len(runs)
    last = sum(r["last"] for r in runs.values()) / len(runs)
    return {"steps": 1, "first": round(first, 4), "last": round(last, 4), "margin": margin,
            "passed": all(r["passed"] for r in runs.values()), "directions": runs}  # fmt: skip
