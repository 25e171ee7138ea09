"""`terminus view`: episodes as static HTML a person can read, from a trajectories file, an eval cell or a run folder.

The pages need no server and load nothing from outside (inline CSS, one inline script the page's Content Security
Policy pins by hash), so they open offline in any browser and in JupyterLab. Everything shown from a record is
escaped: command output and model replies are untrusted text, and stay text.

Inputs, recognised by their records' `schema`:
- trajectories (`terminus.trajectory/1`, JSON lines, or one JSON object as `terminus exec --trajectory` writes):
  query, each command with its exit status, timing and output, the final answer, and the verdict where one exists
  (`--verdicts`, or the run's `judge/teacher_verdicts.jsonl`) with the facts found and missed (from `--tasks`, or
  the run's task file);
- eval records (`terminus.eval/1`: `eval/cells/<cell>.jsonl` or `eval/records.jsonl`): the main agent's turns and
  tokens beside the subagent's, each subagent call's query, commands and answer, and the episode's scores;
- a run folder (`results/<run>/` or `results/cached/`): every one of those files it holds.
"""

from __future__ import annotations

import base64
import hashlib
import html
import json
import logging
import os
import re
import tempfile
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from terminus.agent import trajectory
from terminus.errors import TerminusError
from terminus.eval import record as eval_record
from terminus.io import check_record, read_jsonl
from terminus.judge import verdict as verdict_record
from terminus.judge.facts import required_facts

log = logging.getLogger(__name__)

TRAJECTORY, EVAL = "terminus.trajectory", "terminus.eval"
# The run folder's files, in the order the index shows them.
RUN_TRAJECTORIES = (
    ("collect/trajectories.jsonl", "teacher rollouts (collect)"),
    ("tasks/valid.validation.trajectories.jsonl", "the scripted expert's validation episodes"),
)
RUN_VERDICTS = ("judge/teacher_verdicts.jsonl",)
RUN_TASKS = ("tasks/valid.jsonl", "tasks/tasks.jsonl")
_ELIDED = re.compile(r"\[\.\.\. (\d+) (lines?|bytes) of output elided \.\.\.\]")
_EXIT = re.compile(r"\n?\[exit code (-?\d+)\]\s*$")


class ViewError(TerminusError, ValueError):
    """The path given to `terminus view` holds nothing it can show."""


@dataclass
class Episode:
    kind: str  # "trajectory" | "eval"
    record: dict
    verdict: dict | None = None
    facts: dict | None = None  # {"found": [...], "missed": [...]} where the task's facts are known
    page: str = ""


@dataclass
class Section:
    title: str
    source: str
    episodes: list[Episode] = field(default_factory=list)


# -- reading ---------------------------------------------------------------------------------------------------
def _records(path: Path) -> list[dict]:
    """The records of a trajectories or eval file, each checked against its kind's field types (`_fields`): a line
    the pages could not show is an error naming the file and the line, never a traceback halfway through."""
    try:
        text = path.read_bytes().decode("utf-8")
    except UnicodeDecodeError:
        text = ""  # read_jsonl names the line
    stripped = text.strip()
    if stripped.startswith("{") and "\n{" not in stripped:  # one JSON object (exec --trajectory) or one line
        try:
            record = json.loads(stripped)
        except json.JSONDecodeError:
            pass
        else:
            line = text[: text.index("{")].count("\n") + 1  # where the object starts
            return [check_record(record, _fields(record), f"{path}:{line}")]
    return read_jsonl(path, _fields)


def _fields(record: dict) -> dict | None:
    kind = _kind(record) if isinstance(record, dict) else None
    return trajectory.FIELDS if kind == "trajectory" else eval_record.FIELDS if kind == "eval" else None


def _kind(record: dict) -> str | None:
    if not isinstance(record, dict):
        return None
    schema = str(record.get("schema", ""))
    if schema.startswith(TRAJECTORY) or ("messages" in record and "turns" in record):
        return "trajectory"
    if schema.startswith(EVAL) or "subagent_episodes" in record:
        return "eval"
    return None


def _tasks(path: Path | None) -> dict[str, tuple[str, dict]]:
    """task id -> (task type, facts), from a task file (read and checked as every stage reads one)."""
    from terminus.tasks.record import load_tasks  # jsonschema: seconds, only when a task file is shown

    if path is None or not path.is_file():
        return {}
    return {t.id: (t.task_type, t.facts) for t in load_tasks(path)}


def _facts(verdict: dict | None, task: tuple[str, dict] | None) -> dict | None:
    """The required facts an answer stated and those it missed, from the verdict's `missing` and the task."""
    if verdict is None or task is None:
        return None

    required = [f"{kind}={value}" for kind, value in required_facts(*task)]
    missing = list(verdict.get("missing") or [])
    return {"found": [f for f in required if f not in missing], "missed": missing}


def load(path: Path, verdicts: Path | None = None, tasks: Path | None = None) -> list[Section]:
    """The sections `terminus view PATH` shows, in order."""
    path = Path(path)
    if not path.exists():
        raise ViewError(f"{path} does not exist: give a trajectories file, an eval cell file or a run folder")
    run = path if path.is_dir() else None
    if run is None and path.parent.name in ("collect", "cells", "eval", "tasks", "training"):
        run = path.parent.parent if path.parent.name != "cells" else path.parent.parent.parent
    tasks = tasks or next((run / t for t in RUN_TASKS if run and (run / t).is_file()), None)
    verdicts = verdicts or next((run / v for v in RUN_VERDICTS if run and (run / v).is_file()), None)
    task_facts = _tasks(tasks)
    verdict_rows = read_jsonl(verdicts, verdict_record.FIELDS) if verdicts and verdicts.is_file() else []
    by_trajectory = {v.get("trajectory_id"): v for v in verdict_rows}

    files: list[tuple[Path, str]] = []
    if path.is_dir():
        files += [(path / f, title) for f, title in RUN_TRAJECTORIES if (path / f).is_file()]
        files += [(p, f"held-out episodes: {p.stem.removeprefix('held_out_')}") for p in
                  sorted((path / "training").glob("held_out_*.jsonl"))]  # fmt: skip
        cells = sorted((path / "eval" / "cells").glob("*.jsonl"))
        if cells:
            files += [(p, f"eval cell {p.stem}") for p in cells]
        elif (path / "eval" / "records.jsonl").is_file():
            files.append((path / "eval" / "records.jsonl", ""))
    else:
        files.append((path, ""))

    sections: list[Section] = []
    for file, title in files:
        rows = _records(file)
        kinds = {_kind(r) for r in rows}
        if None in kinds or len(kinds) > 1:
            raise ViewError(f"{file} holds records that are neither trajectories nor eval records")
        if "eval" in kinds and not title:  # a merged records file: one section per cell
            cells: dict[str, list[dict]] = defaultdict(list)
            for row in rows:
                cells["__".join(str(row.get(k)) for k in ("main_agent", "subagent", "benchmark", "seed"))].append(row)
            for cell, members in cells.items():
                sections.append(Section(f"eval cell {cell}", str(file), [Episode("eval", r) for r in members]))
            continue
        section = Section(title or f"trajectories: {file.name}", str(file))
        for row in rows:
            if "eval" in kinds:
                section.episodes.append(Episode("eval", row))
                continue
            verdict = by_trajectory.get(row.get("id"))
            section.episodes.append(
                Episode("trajectory", row, verdict, _facts(verdict, task_facts.get(row.get("task_id"))))
            )
        sections.append(section)
    if not any(s.episodes for s in sections):
        raise ViewError(f"{path} holds no episodes (no trajectories, eval cells or eval records)")
    return sections


# -- the episode, as both the demo and the viewer show it ------------------------------------------------------
def command_steps(trajectory: dict) -> list[dict]:
    """Each command of an episode with what it printed: the turns paired with the tool messages, in order."""
    outputs = [m.get("content") or "" for m in trajectory.get("messages", []) if m.get("role") == "tool"]
    steps = []
    for turn, output in zip(trajectory.get("turns", []), outputs, strict=False):
        elided = _ELIDED.search(output)
        steps.append(
            {
                "command": turn.get("command", ""),
                "exit_code": turn.get("exit_code"),
                "duration_s": float(turn.get("duration_s") or 0.0),
                "timeout_ms": turn.get("timeout_ms"),
                "timed_out": bool(turn.get("timed_out")),
                "output": _EXIT.sub("", output),
                "lines": len(output.splitlines()),
                "elided": elided.group(0) if elided else None,
            }
        )
    return steps


def status(step: dict) -> str:
    """How a command ended, in a few words: `exit 1`, `timed out`, `killed (no exit status)`."""
    if step["timed_out"]:
        return "timed out"
    return "killed (no exit status)" if step["exit_code"] is None else f"exit {step['exit_code']}"


# -- writing ----------------------------------------------------------------------------------------------------
_SCRIPT = (
    "function openFromHash(){var id=decodeURIComponent(location.hash.slice(1));if(!id)return;"
    "var all=document.querySelectorAll('details');if(id==='all'){all.forEach(function(d){d.open=true});return}"
    "var el=document.getElementById(id);if(el&&el.tagName==='DETAILS'){el.open=true;el.scrollIntoView()}}"
    "window.addEventListener('hashchange',openFromHash);openFromHash();"
)
_CSP = (
    "default-src 'none'; style-src 'unsafe-inline'; img-src data:; "
    f"script-src 'sha256-{base64.b64encode(hashlib.sha256(_SCRIPT.encode()).digest()).decode()}'"
)
_CSS = """
body{font:14px/1.45 system-ui,-apple-system,Segoe UI,sans-serif;margin:1.5em auto;max-width:1100px;padding:0 1em;
color:#1d1d1f}
h1{font-size:1.4em;margin-bottom:.2em}h2{font-size:1.15em;margin-top:1.6em;border-bottom:1px solid #ddd}
.meta{color:#555;margin:.2em 0 1em}.meta span{margin-right:1.2em}
pre{background:#f6f8fa;border:1px solid #e1e4e8;border-radius:4px;padding:.6em;overflow-x:auto;white-space:pre-wrap;
word-break:break-word;font:12.5px/1.4 ui-monospace,Menlo,Consolas,monospace;margin:.3em 0;
max-height:36em;overflow-y:auto}
details{margin:.35em 0;border-left:3px solid #c8d1dc;padding-left:.6em}
details.fail{border-left-color:#d73a49}details.ok{border-left-color:#28a745}
summary{cursor:pointer}summary code{font:12.5px ui-monospace,Menlo,Consolas,monospace;background:#f0f2f4;
padding:1px 4px;border-radius:3px}
.tag{display:inline-block;font-size:.85em;padding:0 .45em;border-radius:3px;background:#eef;margin-left:.4em}
.tag.fail{background:#fde4e6}.tag.ok{background:#e3f6e8}.tag.warn{background:#fff3cd}
table{border-collapse:collapse;margin:.5em 0}td,th{border:1px solid #ddd;padding:.25em .6em;text-align:left;
vertical-align:top}th{background:#f6f8fa}td.num{text-align:right;font-variant-numeric:tabular-nums}
.answer dt{font-family:ui-monospace,Menlo,Consolas,monospace;font-size:12.5px;margin-top:.5em}
.answer dd{margin:.15em 0 .3em 1.2em}ul.facts{margin:.2em 0}.found{color:#1a7f37}.missed{color:#b31d28}
a{color:#0550ae}
"""


def _e(value: object) -> str:
    return html.escape("" if value is None else str(value), quote=True)


def _page(title: str, body: str) -> str:
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{_e(_CSP)}">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{_e(title)}</title><style>{_CSS}</style></head>\n<body>\n{body}\n"
        f"<script>{_SCRIPT}</script>\n</body></html>\n"
    )


def _number(value: object, digits: int = 2) -> str:
    if value is None or value == "":
        return "–"
    if isinstance(value, float):
        return f"{int(value):,}" if digits == 0 and value == int(value) else f"{value:,.{digits}f}"
    if isinstance(value, int):
        return f"{value:,}"
    return _e(value)


def _steps_html(steps: list[dict]) -> str:
    if not steps:
        return "<p>(no command ran)</p>"
    parts = []
    for i, step in enumerate(steps, 1):
        ok = not step["timed_out"] and step["exit_code"] == 0
        tags = f'<span class="tag {"ok" if ok else "fail"}">{_e(status(step))}</span>'
        tags += f'<span class="tag">{step["duration_s"]:.2f} s</span>'
        if step.get("timeout_ms"):
            tags += f'<span class="tag">timeout {int(step["timeout_ms"]) / 1000:g} s</span>'
        tags += f'<span class="tag">{step["lines"]} lines</span>'
        if step["elided"]:
            tags += f'<span class="tag warn">{_e(step["elided"].strip("[]. "))}</span>'
        output = step["output"] if step["output"].strip() else "(no output)"
        parts.append(
            f'<details id="cmd-{i}" class="{"ok" if ok else "fail"}"><summary>{i}. <code>$ {_e(step["command"])}'
            f"</code>{tags}</summary><pre>{_e(output)}</pre></details>"
        )
    return "\n".join(parts)


def _answer_html(pairs: list[dict] | None, notes: list[str]) -> str:
    if not pairs:
        body = "<p><em>(no final answer)</em></p>"
    else:
        body = (
            '<dl class="answer">'
            + "".join(f"<dt>Command: {_e(p.get('command'))}</dt><dd>{_e(p.get('summary'))}</dd>" for p in pairs)
            + "</dl>"
        )
    if notes:
        body += "<p>Notes for the main agent:</p><ul>" + "".join(f"<li>{_e(n)}</li>" for n in notes) + "</ul>"
    return body


def _list(items: list, css: str, empty: str = "none") -> str:
    if not items:
        return f"<em>{_e(empty)}</em>"
    return f'<ul class="facts {css}">' + "".join(f"<li>{_e(x)}</li>" for x in items) + "</ul>"


def _verdict_html(verdict: dict | None, facts: dict | None) -> str:
    if verdict is None:
        return "<p><em>No verdict for this episode.</em></p>"
    rows = [
        ("reward (Scorer)", verdict.get("reward")),
        ("fact recall", verdict.get("fact_recall")),
        ("fact precision", verdict.get("fact_precision")),
        ("judge score", verdict.get("judge_score")),
        ("judge", (verdict.get("judge") or {}).get("model") if isinstance(verdict.get("judge"), dict) else None),
    ]
    out = (
        "<table>"
        + "".join(f'<tr><th>{_e(k)}</th><td class="num">{_number(v)}</td></tr>' for k, v in rows)
        + "</table>"
    )
    dims = verdict.get("dimensions") or {}
    if dims:
        out += (
            "<h3>Rubric</h3><table><tr><th>dimension</th><th>score</th><th>reason</th></tr>"
            + "".join(
                f'<tr><td>{_e(n)}</td><td class="num">{_number(d.get("score"))}</td>'
                f"<td>{_e(d.get('reason'))}</td></tr>"
                for n, d in dims.items()
            )
            + "</table>"
        )
    elif verdict.get("judge_unparseable"):
        out += "<p>The LLM judge's reply could not be parsed: fact checker only.</p>"
    else:
        out += "<p>No LLM judge for this stage: the fact checker alone.</p>"
    if facts is not None:
        out += "<h3>Facts</h3><p>Found:</p>" + _list(facts["found"], "found")
        out += "<p>Missed:</p>" + _list(facts["missed"], "missed")
    elif verdict.get("missing") is not None:
        out += "<h3>Facts missed</h3>" + _list(verdict.get("missing") or [], "missed")
    out += "<p>Wrong claims:</p>" + _list(verdict.get("wrong") or [], "missed")
    out += "<p>Claims not grounded in any output (hallucinated):</p>" + _list(
        verdict.get("hallucinated") or [], "missed"
    )
    return out


def _conversation_html(messages: list[dict]) -> str:
    parts = []
    for i, m in enumerate(messages, 1):
        text = m.get("content") or ""
        if m.get("tool_calls"):
            text += ("\n" if text else "") + json.dumps(m["tool_calls"], ensure_ascii=False, indent=1)
        size = f'<span class="tag">{len(text):,} chars</span>'
        parts.append(
            f'<details id="msg-{i}"><summary>{i}. {_e(m.get("role"))} {size}</summary><pre>{_e(text)}</pre></details>'
        )
    return "\n".join(parts)


def trajectory_page(ep: Episode) -> str:
    t = ep.record
    steps = command_steps(t)
    title = t.get("task_id") or t.get("id") or "episode"
    meta = [
        ("policy", t.get("policy")),
        ("sandbox", t.get("backend")),
        ("termination", t.get("termination")),
        ("commands", len(steps)),
        ("model tokens in / out", f"{t.get('prompt_tokens', 0):,} / {t.get('completion_tokens', 0):,}"),
        ("format errors", t.get("format_errors", 0)),
        ("retries", t.get("policy_retries", 0)),
    ]
    body = f'<p><a href="../index.html">← all episodes</a></p><h1>{_e(title)}</h1>'
    body += '<div class="meta">' + "".join(f"<span>{_e(k)}: <b>{_e(v)}</b></span>" for k, v in meta) + "</div>"
    body += f"<h2>Query</h2><pre>{_e(t.get('query'))}</pre>"
    if t.get("description"):
        body += f"<p>Description:</p><pre>{_e(t['description'])}</pre>"
    body += "<h2>Commands</h2>" + _steps_html(steps)
    body += "<h2>Final answer</h2>" + _answer_html(t.get("final_answer"), t.get("notes") or [])
    if t.get("error"):
        body += f"<h2>Error</h2><pre>{_e(t['error'])}</pre>"
    body += "<h2>Verdict</h2>" + _verdict_html(ep.verdict, ep.facts)
    body += "<h2>Conversation</h2>" + _conversation_html(t.get("messages") or [])
    return _page(f"{title} · terminus", body)


def _call_command(turn: dict) -> str:
    """One command of a subagent call in an eval record: how it ended where the record keeps it (`turns`)."""
    tags = ""
    if "exit_code" in turn:
        ended = status({"timed_out": turn.get("timed_out"), "exit_code": turn.get("exit_code")})
        ok = "ok" if ended == "exit 0" else "fail"
        tags = f'<span class="tag {ok}">{_e(ended)}</span>'
        if turn.get("duration_s") is not None:
            tags += f'<span class="tag">{float(turn["duration_s"]):.2f} s</span>'
    return f"<li><code>$ {_e(turn.get('command'))}</code>{tags}</li>"


def eval_page(ep: Episode) -> str:
    r = ep.record
    cell = "__".join(str(r.get(k)) for k in ("main_agent", "subagent", "benchmark", "seed"))
    outcome = (
        f"resolved: {'yes' if r.get('resolved') else 'no'}" if r.get("resolved") is not None
        else f"reward {_number(r.get('reward'))}"
    )  # fmt: skip
    body = f'<p><a href="../index.html">← all episodes</a></p><h1>{_e(r.get("task_id"))}</h1>'
    meta = [("cell", cell), ("language", r.get("language")), ("source", r.get("source")), ("outcome", outcome),
            ("wall", f"{r.get('wall_s', 0) or 0:.1f} s")]  # fmt: skip
    body += '<div class="meta">' + "".join(f"<span>{_e(k)}: <b>{_e(v)}</b></span>" for k, v in meta) + "</div>"
    if r.get("error"):
        body += f"<h2>Error</h2><pre>{_e(r['error'])}</pre>"
    body += "<h2>Main agent and subagent</h2><table><tr><th></th><th>main agent</th><th>subagent</th></tr>"
    main_in, main_out = r.get("main_prompt_tokens"), r.get("main_completion_tokens")
    rows = [
        ("tokens", r.get("main_agent_tokens"), r.get("subagent_tokens")),
        ("tokens in / out", f"{_number(main_in)} / {_number(main_out)}" if main_in is not None else None, None),
        ("turns", r.get("main_agent_turns"), r.get("subagent_turns")),
        ("direct terminal calls / subagent calls", r.get("direct_terminal_calls"), r.get("subagent_calls")),
    ]
    body += (
        "".join(
            f'<tr><th>{_e(k)}</th><td class="num">{_number(a, 0)}</td><td class="num">{_number(b, 0)}</td></tr>'
            for k, a, b in rows
        )
        + "</table>"
    )
    if r.get("main_agent_tokens") is None:
        body += "<p>The execution benchmark forwards the task's query to the subagent: no main agent runs.</p>"
    for i, call in enumerate(r.get("direct_commands") or [], 1):
        if i == 1:
            body += "<h2>The main agent's own commands</h2><ol>"
        body += f"<li><code>$ {_e(call.get('command'))}</code> (after {_e(call.get('after'))} subagent calls)</li>"
    if r.get("direct_commands"):
        body += "</ol>"
    calls = r.get("subagent_episodes") or []
    if calls:
        body += f"<h2>Subagent calls ({len(calls)})</h2>"
    for i, call in enumerate(calls, 1):
        turns = call.get("turns") or [{"command": c} for c in call.get("commands") or []]
        query = str(call.get("query") or "")
        head = f"{i}. {_e(query[:100])}{'…' if len(query) > 100 else ''}"
        tags = f'<span class="tag">{len(turns)} commands</span><span class="tag">{_e(call.get("termination"))}</span>'
        body += f'<details id="call-{i}"><summary>{head}{tags}</summary>'
        body += f"<p>Query:</p><pre>{_e(query)}</pre>"
        if call.get("description"):
            body += f"<p>Description:</p><pre>{_e(call['description'])}</pre>"
        body += "<p>Commands:</p>"
        if not turns:
            body += "<p>(no command ran)</p>"
        else:
            body += "<ol>" + "".join(_call_command(t) for t in turns) + "</ol>"
        answer = call.get("answer") or "(no final answer)"
        body += f"<p>What the main agent received:</p><pre>{_e(answer)}</pre></details>"
    scores = [("reward (Scorer)", r.get("reward")), ("fact recall", r.get("fact_recall")),
              ("fact precision", r.get("fact_precision")), ("judge score", r.get("judge_score")),
              ("hallucinated claims", r.get("hallucinated")), ("rerun rate", r.get("rerun_rate"))]  # fmt: skip
    if any(v is not None for _, v in scores):
        body += (
            "<h2>Scores</h2><table>"
            + "".join(
                f'<tr><th>{_e(k)}</th><td class="num">{_number(v)}</td></tr>' for k, v in scores if v is not None
            )
            + "</table>"
        )
    return _page(f"{r.get('task_id')} · {cell} · terminus", body)


def _slug(text: str, used: set[str]) -> str:
    base = re.sub(r"[^A-Za-z0-9._-]+", "_", text).strip("._")[:90] or "episode"
    slug, n = base, 1
    while slug in used:
        n += 1
        slug = f"{base}-{n}"
    used.add(slug)
    return slug


def _row(ep: Episode) -> str:
    r = ep.record
    link = f'<a href="episodes/{_e(ep.page)}">{_e(r.get("task_id") or r.get("id"))}</a>'
    if ep.kind == "trajectory":
        recall = ep.verdict.get("fact_recall") if ep.verdict else None
        reward = ep.verdict.get("reward") if ep.verdict else None
        cells = [link, _e(r.get("policy")), _e(r.get("termination")), _number(len(r.get("turns") or [])),
                 _number((r.get("prompt_tokens") or 0) + (r.get("completion_tokens") or 0)), _number(recall),
                 _number(reward)]  # fmt: skip
    else:
        outcome = ("resolved" if r.get("resolved") else "not resolved") if r.get("resolved") is not None else ""
        cells = [link, _e(outcome or ", ".join(str(e.get("termination")) for e in r.get("subagent_episodes") or [])),
                 _number(r.get("main_agent_tokens")), _number(r.get("main_agent_turns")),
                 _number(r.get("subagent_tokens")), _number(r.get("subagent_turns")), _number(r.get("fact_recall")),
                 _number(r.get("reward"))]  # fmt: skip
    return "<tr>" + "".join(f"<td{' class=num' if i > 1 else ''}>{c}</td>" for i, c in enumerate(cells)) + "</tr>"


HEADERS = {
    "trajectory": ["task", "policy", "termination", "commands", "tokens", "fact recall", "reward"],
    "eval": ["task", "outcome", "main-agent tokens", "main-agent turns", "subagent tokens", "subagent turns",
             "fact recall", "reward"],
}  # fmt: skip


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        out.write(text)
    os.replace(tmp, path)


def write_site(source: Path, out: Path, verdicts: Path | None = None, tasks: Path | None = None) -> Path:
    """Writes `out/index.html` and one page per episode under `out/episodes/`; returns the index's path."""
    sections = load(Path(source), verdicts, tasks)
    out = Path(out)
    used: set[str] = set()
    episodes = out / "episodes"
    for section in sections:
        for ep in section.episodes:
            key = ep.record.get("key") or ep.record.get("id") or ep.record.get("task_id") or "episode"
            ep.page = _slug(str(key), used) + ".html"
            _write(episodes / ep.page, trajectory_page(ep) if ep.kind == "trajectory" else eval_page(ep))
    total = sum(len(s.episodes) for s in sections)
    body = f'<h1>terminus episodes</h1><div class="meta"><span>from <b>{_e(source)}</b></span>'
    body += f"<span><b>{total}</b> episodes in <b>{len(sections)}</b> sections</span></div><ul>"
    body += "".join(f'<li><a href="#s{i}">{_e(s.title)}</a> ({len(s.episodes)})</li>' for i, s in enumerate(sections))
    body += "</ul>"
    for i, section in enumerate(sections):
        kind = section.episodes[0].kind if section.episodes else "trajectory"
        body += f'<h2 id="s{i}">{_e(section.title)}</h2><p class="meta">{_e(section.source)}</p><table><tr>'
        body += "".join(f"<th>{_e(h)}</th>" for h in HEADERS[kind]) + "</tr>"
        body += "\n".join(_row(ep) for ep in section.episodes) + "</table>"
    index = out / "index.html"
    _write(index, _page("terminus episodes", body))
    log.info("wrote %s and %d episode pages", index, total)
    return index
