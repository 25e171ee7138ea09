"""The pages of `terminus view`, rendered through the Jinja templates beside this module (`templates/`, shipped as
package data) and written as a static site: `index.html` and one page per episode under `episodes/`.

Autoescape is on for every template, so a value from a record is text wherever it lands. The escaping itself is
the standard library's `html.escape` (through `finalize`), as before the templates: `"` stays `&quot;`, and a
missing value (None) shows as nothing rather than "None"."""

from __future__ import annotations

import base64
import hashlib
import html
import json
import logging
import re
from pathlib import Path, PurePath

from jinja2 import Environment, PackageLoader
from markupsafe import Markup

from terminus.io import write_text_atomic
from terminus.view.read import Episode, cell_of, command_steps, load, status

log = logging.getLogger(__name__)

# The page's one script: opens the <details> a link's #fragment names (#all: every one). The Content Security
# Policy allows it by its hash, and nothing else.
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
HEADERS = {
    "trajectory": ["task", "policy", "termination", "commands", "tokens", "fact recall", "reward"],
    "eval": ["task", "outcome", "main-agent tokens", "main-agent turns", "subagent tokens", "subagent turns",
             "fact recall", "reward"],
}  # fmt: skip


def _escape(value: object) -> Markup:
    """Every `{{ value }}`: markup the templates made stays as it is, anything else is escaped as text."""
    if hasattr(value, "__html__"):
        return value
    return Markup(html.escape("" if value is None else str(value), quote=True))


def number(value: object, digits: int = 2) -> Markup:
    """A table's figure: thousands separated, `digits` decimals (0: a whole float without them), `–` for none."""
    if value is None or value == "":
        return Markup("–")
    if isinstance(value, float):
        return Markup(f"{int(value):,}" if digits == 0 and value == int(value) else f"{value:,.{digits}f}")
    if isinstance(value, int):
        return Markup(f"{value:,}")
    return _escape(value)


_ENV = Environment(
    loader=PackageLoader("terminus.view", "templates"),
    autoescape=True,
    finalize=_escape,
    trim_blocks=True,
    lstrip_blocks=True,
    keep_trailing_newline=True,
)
_ENV.filters["number"] = number
_ENV.globals.update(status=status, csp=_CSP, script=Markup(_SCRIPT), episode_name=lambda r: episode_name(r))


def _render(template: str, **context) -> str:
    return _ENV.get_template(template).render(**context)


def episode_name(record: dict) -> str:
    """An episode's name on its page and in the index: its task, else its repository's folder name (an exec record,
    `terminus exec --trajectory`, has no task, and its hex id says nothing), else its id."""
    repo = record.get("repo") if isinstance(record.get("repo"), str) else None
    return str(record.get("task_id") or (repo and PurePath(repo).name) or record.get("id") or "episode")


def trajectory_page(ep: Episode) -> str:
    t = ep.record
    steps = command_steps(t)
    repo = t.get("repo") if isinstance(t.get("repo"), str) else None
    title = episode_name(t)
    meta = [
        *([("repository", repo)] if repo else []),
        ("policy", t.get("policy")),
        ("sandbox", t.get("backend")),
        ("termination", t.get("termination")),
        ("commands", len(steps)),
        ("model tokens in / out", f"{t.get('prompt_tokens', 0):,} / {t.get('completion_tokens', 0):,}"),
        ("format errors", t.get("format_errors", 0)),
        ("retries", t.get("policy_retries", 0)),
    ]
    conversation = []
    for m in t.get("messages") or []:
        text = m.get("content") or ""
        if m.get("tool_calls"):
            text += ("\n" if text else "") + json.dumps(m["tool_calls"], ensure_ascii=False, indent=1)
        conversation.append((m.get("role"), text))
    return _render(
        "trajectory.html.j2", title=f"{title} · terminus", heading=title, t=t, meta=meta, steps=steps,
        verdict=ep.verdict, facts=ep.facts, conversation=conversation,
    )  # fmt: skip


def eval_page(ep: Episode) -> str:
    r = ep.record
    cell = cell_of(r)
    outcome = (
        f"resolved: {'yes' if r.get('resolved') else 'no'}" if r.get("resolved") is not None
        else f"reward {number(r.get('reward'))}"
    )  # fmt: skip
    meta = [("cell", cell), ("language", r.get("language")), ("source", r.get("source")), ("outcome", outcome),
            ("wall", f"{r.get('wall_s', 0) or 0:.1f} s")]  # fmt: skip
    main_in, main_out = r.get("main_prompt_tokens"), r.get("main_completion_tokens")
    sides = [
        ("tokens", r.get("main_agent_tokens"), r.get("subagent_tokens")),
        ("tokens in / out", f"{number(main_in)} / {number(main_out)}" if main_in is not None else None, None),
        ("turns", r.get("main_agent_turns"), r.get("subagent_turns")),
        ("direct terminal calls / subagent calls", r.get("direct_terminal_calls"), r.get("subagent_calls")),
    ]
    calls = [
        {"call": call, "query": str(call.get("query") or ""),
         "turns": call.get("turns") or [{"command": c} for c in call.get("commands") or []]}
        for call in r.get("subagent_episodes") or []
    ]  # fmt: skip
    scores = [("reward (Scorer)", r.get("reward")), ("fact recall", r.get("fact_recall")),
              ("fact precision", r.get("fact_precision")), ("judge score", r.get("judge_score")),
              ("hallucinated claims", r.get("hallucinated")), ("rerun rate", r.get("rerun_rate"))]  # fmt: skip
    return _render(
        "eval.html.j2", title=f"{r.get('task_id')} · {cell} · terminus", r=r, meta=meta, sides=sides, calls=calls,
        scores=[(k, v) for k, v in scores if v is not None],
    )  # fmt: skip


def row_cells(ep: Episode) -> list:
    """An episode's row in the index, after the link to its page (figures formatted, the rest escaped as text)."""
    r = ep.record
    if ep.kind == "trajectory":
        recall = ep.verdict.get("fact_recall") if ep.verdict else None
        reward = ep.verdict.get("reward") if ep.verdict else None
        return [r.get("policy"), r.get("termination"), number(len(r.get("turns") or [])),
                number((r.get("prompt_tokens") or 0) + (r.get("completion_tokens") or 0)), number(recall),
                number(reward)]  # fmt: skip
    outcome = ("resolved" if r.get("resolved") else "not resolved") if r.get("resolved") is not None else ""
    return [outcome or ", ".join(str(e.get("termination")) for e in r.get("subagent_episodes") or []),
            number(r.get("main_agent_tokens")), number(r.get("main_agent_turns")), number(r.get("subagent_tokens")),
            number(r.get("subagent_turns")), number(r.get("fact_recall")), number(r.get("reward"))]  # fmt: skip


def _slug(text: str, used: set[str]) -> str:
    base = re.sub(r"[^A-Za-z0-9._-]+", "_", text).strip("._")[:90] or "episode"
    slug, n = base, 1
    while slug in used:
        n += 1
        slug = f"{base}-{n}"
    used.add(slug)
    return slug


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
            write_text_atomic(episodes / ep.page, trajectory_page(ep) if ep.kind == "trajectory" else eval_page(ep))
    total = sum(len(s.episodes) for s in sections)
    index = out / "index.html"
    page = _render("index.html.j2", title="terminus episodes", source=source, total=total, sections=sections,
                   headers=HEADERS, row_cells=row_cells)  # fmt: skip
    write_text_atomic(index, page)
    log.info("wrote %s and %d episode pages", index, total)
    return index
