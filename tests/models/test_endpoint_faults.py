"""An endpoint that misbehaves (issue 16): every call is bounded in time, retries honour Retry-After and are
counted in the record, unusable replies are retried then end in one line. The endpoint is `fault_endpoint`
(tests/fault_endpoint.py), a real HTTP server on 127.0.0.1."""

from __future__ import annotations

import os
import subprocess
import time

import pytest

from builders import TERMINUS, cli_args
from terminus.agent.loop import AgentConfig, ExecutionSubagent
from terminus.models import make_policy
from terminus.models.openai_compat import PolicyError
from terminus.sandbox import SandboxSpec, make_sandbox

MESSAGES = [{"role": "user", "content": "run the tests"}]


def _policy(endpoint, **options):
    return make_policy("openai", "tiny", base_url=endpoint.url, **options)


def _episode(policy, tmp_path):
    (tmp_path / "README.md").write_text("demo\n")
    with make_sandbox(SandboxSpec("local"), tmp_path) as box:
        return ExecutionSubagent(policy, box, AgentConfig(max_turns=3)).run("list the files")


@pytest.mark.timeout(30)
def test_retry_after_is_honoured_and_the_retry_is_in_the_record(fault_endpoint, tmp_path):
    fault_endpoint.script, fault_endpoint.retry_after = ["429", "ok"], "3"
    traj = _episode(_policy(fault_endpoint, max_retries=4), tmp_path)
    assert traj.termination == "final_answer"
    assert len(fault_endpoint.arrivals) == 2
    assert fault_endpoint.gaps()[0] >= 2.9  # the header's 3 s, not the SDK's 0.5 s first backoff
    assert traj.policy_retries == 1


@pytest.mark.timeout(30)
def test_retries_of_a_failed_call_are_counted_in_the_record(fault_endpoint, tmp_path):
    fault_endpoint.script, fault_endpoint.retry_after = ["429"], "1"
    traj = _episode(_policy(fault_endpoint, max_retries=2), tmp_path)
    assert traj.termination == "crash"
    assert len(fault_endpoint.arrivals) == 3  # the first request and two retries, no more
    assert traj.policy_retries == 2
    assert "HTTP 429 after 2 retries" in traj.error and "\n" not in traj.error


@pytest.mark.timeout(30)
def test_server_errors_are_retried_then_one_line(fault_endpoint):
    fault_endpoint.script = ["500"]
    with pytest.raises(PolicyError, match="HTTP 500 after 2 retries") as caught:
        _policy(fault_endpoint, max_retries=2).respond(MESSAGES, [])
    assert len(fault_endpoint.arrivals) == 3 and caught.value.retries == 2
    assert "\n" not in str(caught.value)


@pytest.mark.timeout(30)
@pytest.mark.parametrize("mode", ["malformed", "html", "empty"])
def test_unusable_replies_are_retried_like_server_errors(fault_endpoint, mode):
    fault_endpoint.script = [mode, "ok"]
    reply = _policy(fault_endpoint, max_retries=2, backoff_s=0.05).respond(MESSAGES, [])
    assert "<final_answer>" in reply["content"] and reply["retries"] == 1


@pytest.mark.timeout(30)
@pytest.mark.parametrize(
    ("mode", "says"), [("malformed", "malformed JSON"), ("html", "non-JSON reply"), ("empty", "without choices")]
)
def test_unusable_replies_end_in_one_line(fault_endpoint, mode, says):
    fault_endpoint.script = [mode]
    with pytest.raises(PolicyError, match=says) as caught:
        _policy(fault_endpoint, max_retries=1, backoff_s=0.05).respond(MESSAGES, [])
    assert len(fault_endpoint.arrivals) == 2 and caught.value.retries == 1
    assert "\n" not in str(caught.value) and fault_endpoint.url in str(caught.value)


@pytest.mark.timeout(30)
def test_an_endpoint_that_never_answers_is_bounded(fault_endpoint):
    fault_endpoint.script = ["never"]
    start = time.monotonic()
    with pytest.raises(PolicyError, match="did not answer within 1 s") as caught:
        _policy(fault_endpoint, max_retries=1, timeout_s=1).respond(MESSAGES, [])
    elapsed = time.monotonic() - start
    # timeout x (retries + 1) plus the SDK's first backoff (at most 0.5 s) and some slack
    assert elapsed < 1 * 2 + 0.5 + 1.5, elapsed
    assert len(fault_endpoint.arrivals) == 2 and caught.value.retries == 1


@pytest.mark.timeout(60)
def test_exec_contract_never_answering_endpoint(fault_endpoint, tmp_path):
    """The issue's contract: <= 30 s, non-zero exit, one line of error, no traceback."""
    fault_endpoint.script = ["never"]
    (tmp_path / "README.md").write_text("demo\n")
    env = {k: v for k, v in os.environ.items() if k not in ("TERMINUS_DEBUG", "OPENAI_API_KEY", "OPENAI_BASE_URL")}
    limits = {"sandbox": "local", "request_timeout": 3, "max_retries": 1}
    start = time.monotonic()
    done = subprocess.run(
        [TERMINUS, *cli_args("exec", repo=tmp_path, query="run the tests", **fault_endpoint.policy_options, **limits)],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )
    elapsed = time.monotonic() - start
    assert elapsed <= 30, elapsed
    assert done.returncode != 0
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error:"), done.stderr
    assert "Traceback" not in done.stderr + done.stdout and fault_endpoint.url in lines[0]
    assert len(fault_endpoint.arrivals) == 2
