"""Episodes in lockstep: a batch of subagent episodes runs together, each in its own sandbox and thread, through the
same loop as at inference (prompts, limits, forced final answers); at every turn the pending model calls of all live
episodes go to the generator as one batch.

The loop is untouched: each episode gets a policy whose `respond()` hands its request to a shared `Lockstep` and
waits. When every live episode is waiting (the others are running their commands, concurrently), the batch goes to
`generator.generate(...)` in episode order, so the result does not depend on which command finished first.

With `tokens` (GRPO), each episode keeps its token sequence as generated (`models.generate.EpisodeTokens`): the
generator gets those token ids as prompts, the loop is asked to answer now before the budget runs out, and an
episode whose prompt outgrows the engine's context ends alone (a crash) while its batch goes on.

No failure of one episode ends the batch: a generator that fails gives each waiting episode a GenerationError (its
loop records a crash), and an episode whose own code raises one of the project's errors (a sandbox that fails to
start or to close, an endpoint) ends as a crash record; only a bug (any other exception) is raised.
"""

from __future__ import annotations

import logging
import sys
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from terminus.agent.trajectory import Trajectory
from terminus.errors import TerminusError
from terminus.models.generate import EpisodeTokens

log = logging.getLogger(__name__)


class GenerationError(TerminusError, RuntimeError):
    """The generator (the rollout's sampling engine or endpoint) failed for a whole batch: no outcome of the policy."""


class Lockstep:
    def __init__(self, generator, episodes: int) -> None:
        self.generator = generator
        self.live = episodes
        self.cond = threading.Condition()
        self.pending: dict[int, tuple[list[dict], list[dict], list[int] | None]] = {}
        self.results: dict[int, dict | BaseException] = {}
        self.generation_s = 0.0
        self.batch_sizes: list[int] = []

    def request(self, index: int, messages: list[dict], tools: list[dict], prompt: list[int] | None = None) -> dict:
        with self.cond:
            self.pending[index] = (messages, tools, prompt)
            self._flush_if_ready()
            while index not in self.results:
                self.cond.wait()
            result = self.results.pop(index)
        if isinstance(result, BaseException):
            raise result
        return result

    def finished(self) -> None:
        with self.cond:
            self.live -= 1
            self._flush_if_ready()

    def _flush_if_ready(self) -> None:
        """Called with the lock held: generate once every live episode waits for the model."""
        if not self.pending or len(self.pending) < self.live:
            return
        order = sorted(self.pending)
        batch = [self.pending.pop(i) for i in order]
        start = time.perf_counter()
        try:
            prompts = [p for _, _, p in batch]
            extra = {"prompts": prompts} if all(p is not None for p in prompts) else {}
            replies: list = self.generator.generate([m for m, _, _ in batch], [t for _, t, _ in batch], **extra)
            if len(replies) != len(order):
                raise RuntimeError(f"the generator returned {len(replies)} replies for {len(order)} conversations")
        except Exception as err:  # every waiting episode gets the error: its loop records a crash
            log.warning("generation failed for %d episodes: %s", len(order), err, exc_info=True)
            failure = GenerationError(f"the generator failed: {type(err).__name__}: {err}")
            failure.__cause__ = err
            replies = [failure] * len(order)
        self.generation_s += time.perf_counter() - start
        self.batch_sizes.append(len(order))
        self.results.update(zip(order, replies, strict=True))
        self.cond.notify_all()


@dataclass
class LockstepPolicy:
    """The policy one episode sees. It keeps what the generator returned per reply (token ids, logprobs), and with
    `tokens` the episode's token sequence (whose first prompt's tools it renders every turn with)."""

    lockstep: Lockstep
    index: int
    name: str
    generated: list[dict] = field(default_factory=list)
    tokens: EpisodeTokens | None = None

    def respond(self, messages: list[dict], tools: list[dict], tool_choice: str | None = None) -> dict:
        # local generation: tool_choice is not enforced (the same prompt, tools included, on every turn)
        prompt = None
        if self.tokens is not None:
            tools = self.tokens.tools if self.tokens.replies else tools
            prompt = self.tokens.prompt(messages, tools)  # PromptTooLong ends this episode, not the batch
        reply = self.lockstep.request(self.index, list(messages), list(tools), prompt)
        self.generated.append({"token_ids": reply.get("token_ids"), "logprobs": reply.get("logprobs")})
        if self.tokens is not None:
            self.tokens.reply(reply.get("token_ids") or [], reply.get("logprobs"))
        return {k: v for k, v in reply.items() if k in ("content", "tool_calls", "usage")}

    def must_answer(self, messages: list[dict]) -> bool:
        """The loop asks before each turn: True makes it the last (the episode's token budget is nearly spent)."""
        return self.tokens is not None and self.tokens.must_answer(messages)


@dataclass
class LockstepRun:
    trajectories: list[Trajectory]
    policies: list[LockstepPolicy]
    generation_s: float
    wall_s: float
    batch_sizes: list[int]


def run_lockstep(
    episodes: list[Callable[[LockstepPolicy], Trajectory]],
    generator,
    name: str = "",
    tokens: Callable[[], EpisodeTokens] | None = None,
) -> LockstepRun:
    """Run `episodes[i](policy_i)` together; each callable runs one episode with the policy it is given (for
    example `functools.partial(run_episode, task, tasks_file)`). `tokens` makes each episode's `EpisodeTokens`."""
    lockstep = Lockstep(generator, len(episodes))
    policies = [
        LockstepPolicy(lockstep, i, name or generator.name, tokens=tokens() if tokens else None)
        for i in range(len(episodes))
    ]

    device = _cuda_device()

    def one(i: int) -> Trajectory:
        if device is not None:  # a thread starts on CUDA device 0, not its rank's: generation runs in these threads
            sys.modules["torch"].cuda.set_device(device)
        try:
            return episodes[i](policies[i])
        except TerminusError as err:  # ours (a sandbox, an endpoint): this episode alone fails; a bug is raised
            log.warning("episode %d of %s failed: %s", i, name or generator.name, err)
            traj = Trajectory(id=f"{name or generator.name}#{i}", task_id=None, parent_id=None,
                              policy=policies[i].name, query="")  # fmt: skip
            traj.termination, traj.error = "crash", f"{type(err).__name__}: {err}"
            return traj
        finally:
            lockstep.finished()

    start = time.perf_counter()
    with ThreadPoolExecutor(max_workers=max(1, len(episodes)), thread_name_prefix="lockstep") as pool:
        futures = [pool.submit(one, i) for i in range(len(episodes))]
        trajectories = [f.result() for f in futures]
    return LockstepRun(
        trajectories, policies, lockstep.generation_s, time.perf_counter() - start, lockstep.batch_sizes
    )


def _cuda_device() -> int | None:
    """The calling thread's CUDA device when torch is in use with CUDA (a GRPO rank under DDP: each rank's engine and
    model live on its own device), else None; torch is not imported for it."""
    torch = sys.modules.get("torch")
    if torch is None or not torch.cuda.is_available() or not torch.cuda.is_initialized():
        return None
    return torch.cuda.current_device()
