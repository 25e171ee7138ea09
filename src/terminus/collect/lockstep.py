"""Episodes in lockstep: a batch of subagent episodes runs together, each in its own sandbox and thread, through the
same loop as at inference (prompts, limits, forced final answers); at every turn the pending model calls of all live
episodes go to the generator as one batch.

The loop is untouched: each episode gets a policy whose `respond()` hands its request to a shared `Lockstep` and
waits. When every live episode is waiting (the others are running their commands, concurrently), the batch goes to
`generator.generate(...)` in episode order, so the result does not depend on which command finished first.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from terminus.agent.trajectory import Trajectory


class Lockstep:
    def __init__(self, generator, episodes: int) -> None:
        self.generator = generator
        self.live = episodes
        self.cond = threading.Condition()
        self.pending: dict[int, tuple[list[dict], list[dict]]] = {}
        self.results: dict[int, dict | BaseException] = {}
        self.generation_s = 0.0
        self.batch_sizes: list[int] = []

    def request(self, index: int, messages: list[dict], tools: list[dict]) -> dict:
        with self.cond:
            self.pending[index] = (messages, tools)
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
            replies: list = self.generator.generate([m for m, _ in batch], [t for _, t in batch])
            if len(replies) != len(order):
                raise RuntimeError(f"the generator returned {len(replies)} replies for {len(order)} conversations")
        except Exception as err:  # every waiting episode gets the error: its loop records a crash
            replies = [err] * len(order)
        self.generation_s += time.perf_counter() - start
        self.batch_sizes.append(len(order))
        self.results.update(zip(order, replies, strict=True))
        self.cond.notify_all()


@dataclass
class LockstepPolicy:
    """The policy one episode sees. It keeps what the generator returned per reply (token ids, logprobs)."""

    lockstep: Lockstep
    index: int
    name: str
    generated: list[dict] = field(default_factory=list)

    def respond(self, messages: list[dict], tools: list[dict]) -> dict:
        reply = self.lockstep.request(self.index, list(messages), list(tools))
        self.generated.append({"token_ids": reply.get("token_ids"), "logprobs": reply.get("logprobs")})
        return {k: v for k, v in reply.items() if k in ("content", "tool_calls", "usage")}


@dataclass
class LockstepRun:
    trajectories: list[Trajectory]
    policies: list[LockstepPolicy]
    generation_s: float
    wall_s: float
    batch_sizes: list[int]


def run_lockstep(episodes: list[Callable[[LockstepPolicy], Trajectory]], generator, name: str = "") -> LockstepRun:
    """Run `episodes[i](policy_i)` together; each callable runs one episode with the policy it is given (for
    example `functools.partial(run_episode, task, tasks_file)`)."""
    lockstep = Lockstep(generator, len(episodes))
    policies = [LockstepPolicy(lockstep, i, name or generator.name) for i in range(len(episodes))]

    def one(i: int) -> Trajectory:
        try:
            return episodes[i](policies[i])
        finally:
            lockstep.finished()

    start = time.perf_counter()
    with ThreadPoolExecutor(max_workers=max(1, len(episodes)), thread_name_prefix="lockstep") as pool:
        futures = [pool.submit(one, i) for i in range(len(episodes))]
        trajectories = [f.result() for f in futures]
    return LockstepRun(
        trajectories, policies, lockstep.generation_s, time.perf_counter() - start, lockstep.batch_sizes
    )
