"""What decides the main agent's next step: `replay` (a fixed plan, no model) or `llm` (an OpenAI-compatible
model). Both expose `name` and `next_step(messages, tools) -> assistant message`."""

from __future__ import annotations

import json
import shlex

from terminus.models.openai_compat import OpenAIPolicy

RAW_TESTS = {
    "python": "python3 -m pytest -q",
    "node": "node --test",
    "cmake": "cmake -S . -B build && cmake --build build && ctest --test-dir build --output-on-failure",
    "rust": "cargo test --offline",
    "go": "go test ./...",
}


def in_project(task, command: str) -> str:
    """A command run from the task's project root (nested projects live in a subfolder)."""
    root = task.facts.get("project_root", ".")
    return command if root in (".", "") else f"cd {shlex.quote(root)} && {command}"


def test_command(task) -> str:
    """The language's own test run, from the project root: what a developer types, and what verifies a fix."""
    return in_project(task, RAW_TESTS[task.meta.get("runner", task.language)])


def single_test(language: str, test_id: str) -> str:
    """The command a developer runs to look at one failing test closely."""
    name = test_id.split("::")[-1]
    return {
        "python": f"python3 -m pytest -q -vv {shlex.quote(test_id)}",
        "node": f"node --test --test-name-pattern={shlex.quote(test_id)}",
        "cmake": f"cmake -S . -B build && cmake --build build && ctest --test-dir build -R {shlex.quote(name)} -V",
        "rust": f"cargo test --offline {shlex.quote(name)} -- --nocapture",
        "go": f"go test -run {shlex.quote('^' + name + '$')} -v ./...",
    }[language]


def tool_call(name: str, **args) -> dict:
    """An assistant message calling one tool; `number_call` gives it its id once its turn is known."""
    return {
        "content": "",
        "tool_calls": [
            {"id": f"call_{name}", "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}
        ],
    }


def number_call(reply: dict, step: int) -> dict:
    """Ids unique per episode, as a chat model's are, and the same in every process: `call_<turn>_<tool>`."""
    for call in reply.get("tool_calls") or []:
        call["id"] = f"call_{step}_{call['function']['name']}"
    return reply


class ReplayMainAgent:
    """Deterministic: per task, the same execution needs, as raw commands or as subagent queries."""

    name = "replay"

    def prepare(self, task) -> None:
        fix = task.meta.get("fix")
        if not fix:
            raise ValueError(f"task {task.id} has no recorded fix: the replay main agent needs a repair task")
        self.task, self.fix, self.step = task, fix, 0

    def plan(self, delegate: bool) -> list[dict]:
        task, fix = self.task, self.fix
        failing = (task.facts.get("tests") or {}).get("failing") or [""]
        language = task.meta.get("runner", task.language)
        raw = test_command(task)
        if delegate:
            steps = [
                tool_call(
                    "execution_subagent",
                    query="Run the unit tests and tell me what fails and why.",
                    description="Running the test suite",
                ),
                tool_call(
                    "execution_subagent",
                    query=f"Run only the failing test {failing[0]} and tell me the assertion, "
                    "the values it compared and the file:line where it fails.",
                    description=f"Running {failing[0]}",
                ),
            ]
        else:
            steps = [
                tool_call("run_in_terminal", command=raw, timeout_ms=300_000),
                tool_call(
                    "run_in_terminal", command=in_project(task, single_test(language, failing[0])), timeout_ms=300_000
                ),
            ]
        steps += [
            tool_call("read_file", path=fix["file"]),
            tool_call("edit_file", path=fix["file"], old=fix["old"], new=fix["new"]),
        ]
        if delegate:
            steps.append(
                tool_call(
                    "execution_subagent",
                    query="Run the tests again and tell me whether they all pass now.",
                    description="Re-running the test suite",
                )
            )
        else:
            steps.append(tool_call("run_in_terminal", command=raw, timeout_ms=300_000))
        steps.append({"content": f"Fixed {fix['file']}:{fix['line']}; the tests pass."})
        return steps

    def next_step(self, messages: list[dict], tools: list[dict]) -> dict:
        delegate = any(t["function"]["name"] == "execution_subagent" for t in tools)
        steps = self.plan(delegate)
        reply = steps[min(self.step, len(steps) - 1)]
        self.step += 1
        return number_call(reply, self.step)


class LLMMainAgent:
    """Any OpenAI-compatible chat model as the main agent."""

    def __init__(self, model: str, base_url: str | None = None, api_key: str | None = None, **options) -> None:
        self.policy = OpenAIPolicy(model, base_url=base_url, api_key=api_key, **options)
        self.name = f"llm:{model}"

    def next_step(self, messages: list[dict], tools: list[dict]) -> dict:
        return self.policy.respond(messages, tools)
