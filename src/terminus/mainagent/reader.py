"""`reader`: an offline main agent whose every decision comes from the text it received.

It follows replay's plan (run the tests, locate the failure, read, edit, verify) but knows nothing of the
task's recorded facts or fix. It lists the repository, runs the tests (through `execution_subagent` when it has
one, else in its terminal), takes the `path:line` of the failure from what came back, reads that file, finds
the function the failing assertion calls and its definition, and tries one-token operator edits there (the
kind of fault a failing value points to), verifying each by running the tests again and undoing the ones that
do not help. When a subagent's answer lacks the location or the verdict, it runs the command itself, with the
raw output in its context, as a real agent does, and stops delegating. A wrong location gives wrong edits and
an unresolved task; a silent subagent costs the tokens of the direct runs it forces.
"""

from __future__ import annotations

import logging
from collections.abc import Generator

from terminus.mainagent import parse
from terminus.mainagent.brains import number_call, tool_call
from terminus.mainagent.parse import Edit, Project

log = logging.getLogger(__name__)

RUN_QUERY = "Run the unit tests and tell me which tests fail, with the file:line of each failure."
RUN_DESCRIPTION = "Running the test suite"
VERIFY_QUERY = "Run the unit tests again and tell me whether they all pass now."
VERIFY_DESCRIPTION = "Re-running the test suite"
MAX_LOCATIONS = 3  # reported locations followed before giving up
MAX_TRIALS = 6  # operator edits tried before giving up: each costs a test run
TIMEOUT_MS = 300_000

Step = Generator[dict, str, None]


class ReaderMainAgent:
    """Stateful for one episode: a generator holds the plan and receives each tool result."""

    name = "reader"

    def __init__(self) -> None:
        self._plan: Step | None = None
        self._steps = 0
        self.delegate = False
        self.notes: list[str] = []  # why it did what it did, for the final message and for debugging

    def next_step(self, messages: list[dict], tools: list[dict]) -> dict:
        self._steps += 1
        if self._plan is None:
            self.delegate = any(t["function"]["name"] == "execution_subagent" for t in tools)
            self._plan = self.plan()
            reply = next(self._plan)
        else:
            last = messages[-1]
            output = last.get("content") or "" if last.get("role") == "tool" else ""
            try:
                reply = self._plan.send(output)
            except StopIteration:
                reply = {"content": "Stopped."}
        return number_call(reply, self._steps)

    # -- tools, as generator steps: `yield` sends the call, the value sent back is the tool's output --------------
    def read(self, path: str) -> Step:
        return (yield tool_call("read_file", path=path))

    def terminal(self, command: str) -> Step:
        return (yield tool_call("run_in_terminal", command=command, timeout_ms=TIMEOUT_MS))

    def ask(self, query: str, description: str) -> Step:
        return (yield tool_call("execution_subagent", query=query, description=description))

    def edit(self, edit: Edit, undo: bool = False) -> Step:
        old, new = (edit.new, edit.old) if undo else (edit.old, edit.new)
        return (yield tool_call("edit_file", path=edit.path, old=old, new=new))

    def run_tests(self, project: Project | None, query: str, description: str, need_location: bool) -> Step:
        """Test output to read: the subagent's answer if it says what is needed, else the raw run's output."""
        if self.delegate:
            answer = yield from self.ask(query, description)
            verdict = parse.passed(answer)
            located = bool(parse.locations(answer, self.files, self.prefer))
            if verdict is not None and (located or verdict or not need_location):
                return answer
            self.notes.append("the subagent's answer lacked the result; ran the tests myself")
            self.delegate = False  # a subagent that did not say what it saw is not asked again
        if project is None:
            return ""
        return (yield from self.terminal(project.test_command()))

    # -- the plan --------------------------------------------------------------------------------------------
    def plan(self) -> Step:
        listing = yield from self.read(".")
        self.files = parse.listing_files(listing)
        project = parse.detect_project(self.files)
        self.prefer = project.root if project else "."
        if project is None and not self.delegate:
            yield {"content": "I found no build file, so I do not know how to run the tests."}
            return
        report = yield from self.run_tests(project, RUN_QUERY, RUN_DESCRIPTION, need_location=True)
        if parse.passed(report):
            yield {"content": "The tests already pass; nothing to fix."}
            return
        found = parse.locations(report, self.files, self.prefer)
        if not found and project is not None:  # the failure was cut out of a long log: look at the failures only
            self.notes.append("no file:line in the output; reran the tests, keeping the failures' lines")
            report = yield from self.terminal(parse.failures_only(project.test_command()))
            found = parse.locations(report, self.files, self.prefer)
        if not found:
            yield {"content": "The test output names no file:line of the failure; I cannot locate the fault."}
            return
        trials = yield from self.suspects(found, project)
        if not trials:
            yield {"content": f"I found nothing to change at {found[0][0]}:{found[0][1]}."}
            return
        for edit in trials[:MAX_TRIALS]:
            result = yield from self.edit(edit)
            if result != "ok":
                continue
            report = yield from self.run_tests(project, VERIFY_QUERY, VERIFY_DESCRIPTION, need_location=False)
            if parse.passed(report):
                yield {"content": f"Fixed {edit.path}:{edit.line}: `{edit.old.strip()}` -> `{edit.new.strip()}`."}
                return
            yield from self.edit(edit, undo=True)
        where = ", ".join(f"{p}:{n}" for p, n in found[:3])
        yield {"content": f"No edit I tried at the reported location ({where}) made the tests pass."}

    def suspects(self, found: list[tuple[str, int]], project: Project | None) -> Step:
        """Edits to try for the first reported locations that lead somewhere."""
        read: dict[str, list[str]] = {}
        for path, line in found[:MAX_LOCATIONS]:
            edits = yield from self.suspects_at(path, line, project, read)
            if edits:
                return edits
        return []

    def suspects_at(self, path: str, line: int, project: Project | None, contents: dict[str, list[str]]) -> Step:
        """At a reported source line: operator edits on it. At a failing assertion: edits in the body of the
        function it calls, whose definition is found by reading the project's source files."""
        if path not in contents:
            contents[path] = (yield from self.read(path)).splitlines()
        lines = contents[path]
        if not 1 <= line <= len(lines):
            return []
        asserts = any(word in lines[line - 1].lower() for word in ("assert", "expect", "errorf", "fatalf", "check"))
        if not parse.is_test_file(path) and not asserts:
            return parse.operator_edits(path, lines, [line])
        names = parse.called_names(lines, line)
        if not names:
            return []
        for candidate in parse.source_files(self.files, project, path):
            if candidate not in contents:
                contents[candidate] = (yield from self.read(candidate)).splitlines()
            for name in names:
                start = parse.definition(name, contents[candidate])
                if start is not None and not (candidate == path and abs(start - line) < 2):
                    self.notes.append(f"{name} is defined at {candidate}:{start}")
                    source = contents[candidate]
                    return parse.operator_edits(candidate, source, parse.body(source, start))
        return []
