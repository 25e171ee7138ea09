"""What a main agent actually sends: varied phrasings per task type, some naming an exact command, some only
the goal, some carrying a user restriction. Deterministic in the seed; optional paraphrase by any
OpenAI-compatible endpoint (the paper rephrased forwarded queries with a small instruct model)."""

from __future__ import annotations

import logging
import random

log = logging.getLogger(__name__)

COMMANDS = {
    "python": {"test": "python -m pytest -q", "build": "python -m compileall -q ."},
    "node": {"test": "node --test", "build": "node --check on the sources"},
    "cmake": {
        "test": "ctest --test-dir build --output-on-failure",
        "build": "cmake -S . -B build && cmake --build build",
    },
    "rust": {"test": "cargo test --offline", "build": "cargo build --offline"},
    "go": {"test": "go test ./...", "build": "go build ./..."},
}

OPENINGS = (
    "",
    "",
    "",
    "I just pulled the latest changes. ",
    "Before I open a PR: ",
    "Quick check please. ",
    "I edited a few files. ",
    "CI is red on this branch. ",
)
RESTRICTIONS = (
    "",
    "",
    "",
    " Do not install anything.",
    " Do not modify any files.",
    " Keep it read-only: no installs, no edits.",
    " Don't try to fix anything, just report.",
)

TEMPLATES = {
    "test-execution": (
        "Run the unit tests and tell me what fails and why.",
        "Run the test suite and give me the pass/fail counts and the names of any failing tests.",
        "Can you run `{test}` and summarise the results?",
        "Execute the tests for the project{where} and report which ones fail.",
        "Please run all tests and tell me whether everything passes.",
        "Run only the unit tests (nothing else) and list the failures with their error messages.",
        "How many tests pass and how many fail right now? Run them and let me know.",
        "Run the tests with `{test}` and tell me the first failing assertion and where it is.",
    ),
    "error-diagnosis": (
        "Some tests are failing. Run them and figure out why: which assertion fails, where, and the likely cause.",
        "The test run is broken. Find the error, the file and line it points at, and what probably causes it.",
        "Run `{test}`, look at the first failure and tell me where the bug most likely is.",
        "Something is wrong{where}. Diagnose the failing tests and suggest the likely fix.",
        "Please investigate why the test suite fails and give me file:line of the failure.",
        "CI fails on the tests. Reproduce it locally and explain the error.",
    ),
    "build/compile": (
        "Build the project and tell me whether it compiles, with any errors or warnings.",
        "Only build the project, do not run tests. Report errors with file:line and the warning count.",
        "Run `{build}` and summarise the compiler output.",
        "Does the code{where} still compile? Build it and report errors and warnings.",
        "Compile everything and tell me how many warnings there are and whether the build succeeds.",
        "Make a build and list the compile errors, if any, with their locations.",
    ),
    "dependency": (
        "The tests won't even start. Run them and tell me what is missing and how to fix it.",
        "Run the tests and check whether a dependency is missing; tell me which package and the install command.",
        "Run `{test}`: I think an import fails. Which package is missing and how do I install it?",
        "Figure out why the test run fails at import time and what I need to install.",
    ),
}


def make_query(task_type: str, language: str, project_root: str, rng: random.Random) -> str:
    template = rng.choice(TEMPLATES[task_type])
    commands = COMMANDS[language]
    where = f" in {project_root}/" if project_root not in ("", ".") and rng.random() < 0.5 else ""
    text = template.format(test=commands["test"], build=commands["build"], where=where)
    restriction = rng.choice(RESTRICTIONS)
    if task_type == "dependency" and "install" in restriction.lower():
        restriction = " Do not install it yourself, just tell me."
    return (rng.choice(OPENINGS) + text + restriction).strip()


def paraphrase(query: str, base_url: str, model: str, api_key: str | None = None, timeout_s: float = 30.0) -> str:
    """Rephrase a query with any OpenAI-compatible chat endpoint; on any failure keep the original."""
    import httpx

    prompt = (
        "Rephrase this request from a developer to a colleague who will run commands for them. Keep every "
        "command, file name and restriction exactly; change only the wording. Reply with the request only.\n\n" + query
    )
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    try:
        reply = httpx.post(
            base_url.rstrip("/") + "/chat/completions",
            json={"model": model, "messages": [{"role": "user", "content": prompt}], "temperature": 0.7},
            headers=headers,
            timeout=timeout_s,
        )
        reply.raise_for_status()
        text = reply.json()["choices"][0]["message"]["content"].strip()
    except Exception as err:  # a paraphrase is optional: report it and keep the template's query
        log.warning("paraphrase failed (%s); keeping the original query", err)
        return query
    return text or query
