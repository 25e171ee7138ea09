"""Harbor's verifier and Terminal-Bench's pass rule, for a `HarborTask` the agent has finished.

Harbor runs the verifier in the agent's own environment once the agent has stopped ([verifier].environment_mode
"shared", the default when a task names no verifier environment, as none of TB2's do:
harbor/models/task/config.py, VerifierConfig). So does `grade_in_sandbox`: in the agent's sandbox, whose state then
is the agent's final state and nothing more (every backend ends what a command leaves running, docker by killing
the container, so no process of the agent's is alive). A fresh container made from it would lose what the sandbox
binds in (its /tmp and HOME), which Harbor's environment keeps. Like Harbor's `Verifier.verify`
(harbor/verifier/verifier.py), it copies the task's `tests/` to /tests, runs /tests/test.sh in the task's working
folder with its output in /logs/verifier/test-stdout.txt, and reads the reward the script wrote there. /tests and
/logs/verifier are emptied first, so a file the agent planted there is never read as the verifier's.

The rule, from Harbor at commit 15309cf8dd1879fedc3af5901cc8b69eb74ce6d3 (harbor-framework/harbor, formerly
laude-institute/harbor):
- rewards (harbor/verifier/verifier.py, `Verifier.verify`, `_parse_reward_json`, `_parse_reward_text`):
  reward.json when it exists, else reward.txt read as `float(text)`; an empty file, text that is no number and
  neither file present are verifier errors (RewardFileEmptyError, VerifierOutputParseError,
  RewardFileNotFoundError);
- pass (harbor/leaderboard/static_validation.py, `_trial_reward`, `_is_passing_trial`): no error, and the reward
  (the `reward` key, else the first value; a bool counts as 1 or 0) equals 1.0. Terminal-Bench's accuracy is the
  share of trials that pass.
"""

from __future__ import annotations

import base64
import binascii
import io
import json
import logging
import shlex
import tarfile
from dataclasses import asdict, dataclass, field

from terminus.errors import TerminusError
from terminus.sandbox import Sandbox, SandboxError, hostfs
from terminus.swe.harbor import HarborTask

log = logging.getLogger(__name__)

TESTS_TAR = "terminus-harbor-tests.tar"
OUT = "terminus-verifier"  # where, in the sandbox's $TMPDIR, the verifier's files are copied for the host to read
READ_LIMIT = 1 << 20  # a reward file is a number or a small JSON object; the stdout kept is its tail
LOG_TAIL = 20_000


class RewardError(TerminusError, ValueError):
    """The verifier left no reward the rule can read (Harbor's verifier errors)."""


@dataclass(frozen=True)
class VerifierPaths:
    """Where Harbor puts the tests and the verifier's output inside the environment (EnvironmentPaths)."""

    tests: str = "/tests"
    logs: str = "/logs/verifier"


def parse_rewards(reward_txt: bytes | None, reward_json: bytes | None) -> dict:
    """The verifier's rewards, read as Harbor reads them: reward.json first, else reward.txt as one float."""
    if reward_json is not None:
        if not reward_json:
            raise RewardError("reward.json is empty")
        try:
            return json.loads(reward_json)
        except (ValueError, TypeError):
            raise RewardError("reward.json is not JSON") from None
    if reward_txt is None:
        raise RewardError("the verifier wrote no reward (no reward.txt or reward.json)")
    if not reward_txt:
        raise RewardError("reward.txt is empty")
    text = reward_txt.decode("utf-8", errors="replace")
    try:
        return {"reward": float(text)}
    except ValueError:
        raise RewardError(f"reward.txt is not a number: {text.strip()[:80]!r}") from None


def reward_of(rewards) -> float | None:
    """The trial's reward: its `reward` key, else its first value; a bool as 1.0 or 0.0; None for anything else."""
    if not isinstance(rewards, dict) or not rewards:
        return None
    value = rewards["reward"] if "reward" in rewards else next(iter(rewards.values()))
    if isinstance(value, bool):
        return 1.0 if value else 0.0
    if isinstance(value, int | float):
        return float(value)
    return None


def passes(rewards, error: str | None = None) -> bool:
    """Terminal-Bench's pass rule: no verifier error and a reward of exactly 1.0."""
    return error is None and reward_of(rewards) == 1.0


@dataclass
class HarborGrade:
    instance_id: str
    resolved: bool
    reward: float | None = None
    rewards: dict = field(default_factory=dict)
    error: str | None = None
    log: str = ""
    """The tail of the verifier's stdout and stderr (test-stdout.txt)."""
    exit_code: int | None = None
    timed_out: bool = False

    def to_dict(self) -> dict:
        return asdict(self)


def judge(instance_id: str, reward_txt: bytes | None, reward_json: bytes | None, *, log_text: str = "") -> HarborGrade:
    """The grade of what the verifier left (the reward files' bytes, None where absent)."""
    try:
        rewards = parse_rewards(reward_txt, reward_json)
    except RewardError as err:
        return HarborGrade(instance_id, resolved=False, error=f"verifier: {err}", log=log_text)
    if not isinstance(rewards, dict):
        return HarborGrade(instance_id, resolved=False, error="verifier: reward.json is not an object", log=log_text)
    return HarborGrade(instance_id, passes(rewards), reward=reward_of(rewards), rewards=rewards, log=log_text)


def tests_archive(task: HarborTask) -> bytes:
    """The task's tests/ folder as a tar (regular files and folders; a link is left out, never followed)."""
    buffer = io.BytesIO()
    root = task.tests_dir
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        for path in sorted(root.rglob("*")):
            if path.is_symlink() or not (path.is_file() or path.is_dir()):
                continue
            tar.add(path, arcname=str(path.relative_to(root)), recursive=False)
    return buffer.getvalue()


def start_env(box: Sandbox) -> str:
    """The exported variables of the sandbox's shell as it starts (`export -p`: shell code that sets them again),
    read before the agent changes them. Base64 on the way out, so that the output's normalisation (escape
    sequences, carriage returns) leaves the values as they are."""
    done = box.run("export -p | base64 | tr -d '\\n'", 60)
    try:
        if done.exit_code != 0 or done.truncated:
            raise ValueError(done.output.strip()[-300:])
        return base64.b64decode(done.output.strip(), validate=True).decode("utf-8", errors="surrogateescape")
    except (ValueError, binascii.Error) as err:
        raise SandboxError(f"cannot read the environment the sandbox starts with: {err}") from None


def _reset_env(env: str) -> str:
    """Shell code that drops every exported variable and sets `env`'s (`start_env`) again."""
    data = base64.b64encode(env.encode("utf-8", errors="surrogateescape")).decode()
    return f'{{ unset $(compgen -e); }} 2>/dev/null; eval "$(printf %s {data} | base64 -d)"; '


def verifier_commands(
    task: HarborTask, paths: VerifierPaths = VerifierPaths(), env: str | None = None
) -> tuple[str, str, str]:
    """(put the tests in place, run the verifier, copy its output out) as shell commands; `env`: `start_env`'s."""
    tests, logs = shlex.quote(paths.tests), shlex.quote(paths.logs)
    tar = f'"${{TMPDIR:-/tmp}}/{TESTS_TAR}"'
    setup = (
        f"rm -rf {tests} {logs} && mkdir -p {tests} {logs} && tar -xf {tar} -C {tests} && rm -f {tar} && "
        f"chmod +x {shlex.quote(paths.tests + '/test.sh')}"
    )
    exports = _reset_env(env) if env is not None else ""
    exports += "".join(f"export {k}={shlex.quote(v)}; " for k, v in task.verifier_env.items())
    script, stdout = shlex.quote(paths.tests + "/test.sh"), shlex.quote(paths.logs + "/test-stdout.txt")
    run = f"cd {shlex.quote(task.workdir)} && ( {exports}{script} ) > {stdout} 2>&1"
    out = f'"${{TMPDIR:-/tmp}}/{OUT}"'
    collect = (
        f"rm -rf {out} && mkdir -p {out} && for f in reward.txt reward.json test-stdout.txt; do "
        f'if [ -f {logs}/"$f" ]; then cp {logs}/"$f" {out}/"$f"; fi; done'
    )
    return setup, run, collect


def _read(box: Sandbox, name: str) -> bytes | None:
    try:
        return hostfs.read_bytes(box.host_tmp, f"{OUT}/{name}", READ_LIMIT)
    except FileNotFoundError:
        return None


def grade_in_sandbox(
    box: Sandbox,
    task: HarborTask,
    paths: VerifierPaths = VerifierPaths(),
    timeout_s: float | None = None,
    env: str | None = None,
) -> HarborGrade:
    """Run the task's verifier in `box` (the agent's, once it has stopped; `env`: the environment it started with,
    `start_env`) and judge its reward by the rule."""
    setup, run, collect = verifier_commands(task, paths, env)
    try:
        hostfs.write_bytes(box.host_tmp, TESTS_TAR, tests_archive(task))
        done = box.run(setup, 300)
        if done.exit_code != 0:
            why = f"environment: the tests could not be put in place: {done.output.strip()[-300:]}"
            return HarborGrade(task.instance_id, False, error=why)
        result = box.run(run, timeout_s or task.verifier_timeout_s)
        copied = box.run(collect, 300)
        if copied.exit_code != 0:
            return HarborGrade(task.instance_id, False, error=f"environment: {copied.output.strip()[-300:]}")
        stdout = _read(box, "test-stdout.txt") or b""
        grade = judge(
            task.instance_id,
            _read(box, "reward.txt"),
            _read(box, "reward.json"),
            log_text=stdout[-LOG_TAIL:].decode("utf-8", errors="replace"),
        )
    except (SandboxError, OSError) as err:  # hostfs refused a planted link, or the sandbox itself failed
        log.warning("%s: the verifier could not run: %s", task.instance_id, err)
        return HarborGrade(task.instance_id, False, error=f"environment: {type(err).__name__}: {err}")
    grade.exit_code, grade.timed_out = result.exit_code, result.timed_out
    if result.timed_out:  # Harbor's VerifierTimeoutError: the trial fails whatever the reward file says
        grade.resolved = False
        grade.error = f"verifier: timed out after {timeout_s or task.verifier_timeout_s:.0f} s"
    return grade
