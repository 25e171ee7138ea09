"""What the LLM judge sees of an episode: each command's head and tail within a budget (`judge.output_chars`), and,
for every claim of its final answer, the output line that the fact checker grounded it in, or that no output holds
it. The judge reads the grounding as a fact: a true count from the middle of a 300-line log is no longer
unsupported because the head and tail left it out, and an invented one is refuted by "not found in any output".
"""

from __future__ import annotations

import re

from terminus.judge.facts import extract_claims, grounded
from terminus.judge.runs import Run, observations_of, runs_named

EVIDENCE_LINE_CHARS = 300  # of one grounding line shown (a minified log line can be a whole file)
_STATUS = re.compile(r"^\[exit code -?\d+\]$|^\[(?:killed|timed out)\b.*\]$")


def clip(text: str, budget: int) -> str:
    """The text, or its first and last budget/2 characters with the cut said."""
    if len(text) <= budget:
        return text
    half = budget // 2
    return f"{text[:half]}\n... [{len(text) - 2 * half} characters cut] ...\n{text[len(text) - half :]}"


def _status_line(run: Run) -> str:
    lines = [line for line in run.output.splitlines() if line.strip()]
    return next((line for line in reversed(lines) if _STATUS.match(line.strip())), lines[-1] if lines else "")


def grounding_line(claim, run: Run) -> str:
    """The line of `run`'s output that states the claim (`claim` is grounded in `run`). A claim grounded in the run
    as a whole (a build's exit status, a count of one-per-test result lines, a count of 0 read from a completed run
    printing none) shows the run's exit status line."""
    if claim.kind != "build" or not claim.value:
        for line in run.output.splitlines():
            # no exit status and no command for one line: a count must be stated on it, a failure printed on it
            if line.strip() and grounded(claim, (Run(None, line, None),)):
                return line.strip()
    return _status_line(run)


def evidence(trajectory: dict) -> list[str]:
    """One line per claim of the final answer: where the fact checker found it, or that it found it nowhere."""
    runs = observations_of(trajectory.get("messages", [])).runs
    index = {id(run): n for n, run in enumerate(runs, 1)}
    out = []
    for entry in trajectory.get("final_answer") or []:
        named = runs_named(entry.get("command") or "", runs)
        for claim in extract_claims(entry.get("summary") or ""):
            stated = f'"{claim.text}" ({claim.kind})'
            where = next((run for run in named if grounded(claim, (run,))), None)
            if where is None:
                scope = "any output" if len(named) == len(runs) else "the output of the command it names"
                out.append(f"- {stated}: not found in {scope}")
                continue
            line = grounding_line(claim, where)[:EVIDENCE_LINE_CHARS]
            out.append(f"- {stated}: grounded in the output of command {index[id(where)]}: {line}")
    return out


def render_episode(trajectory: dict, output_chars: int) -> str:
    """Numbered commands with exit codes and each output's head and tail (`output_chars` in all), the final answer,
    and the fact checker's grounding of each of its claims, as the judge sees an episode."""
    outputs = [m.get("content") or "" for m in trajectory.get("messages", []) if m.get("role") == "tool"]
    lines = []
    for i, turn in enumerate(trajectory.get("turns", [])):
        out = clip(outputs[i] if i < len(outputs) else "", output_chars)
        flag = " (timed out)" if turn.get("timed_out") else ""
        lines.append(f"[command {i + 1}] $ {turn['command']}{flag}\n{out}")
    answer = trajectory.get("final_answer")
    if answer:
        body = "\n".join(f"Command: {e.get('command', '')}\nSummary: {e.get('summary', '')}" for e in answer)
        lines.append(f"Final answer:\n{body}")
        found = evidence(trajectory)
        if found:
            lines.append(
                "Grounding of each claim (checked by the fact checker against the full outputs, not only the parts "
                "shown above; take it as fact):\n" + "\n".join(found)
            )
    else:
        lines.append(f"Final answer: none (episode ended with {trajectory.get('termination')})")
    for note in trajectory.get("notes") or []:
        lines.append(f"Note: {note}")
    return "\n\n".join(lines)
