"""The rubric LLM judge over any OpenAI-compatible endpoint.

A reply is parsed tolerantly (code fences, prose around the JSON, trailing commas, bare scores); a reply that
still cannot be read is retried, then recorded as unparseable: counted, never a silent 0, never a crash.
Calls are cached on disk by a hash of (model, messages) and run at most `concurrency` at a time. Group mode
scores the G rollouts of one prompt relative to each other (as ART's RULER does), for GRPO, in chunks of at most
GROUP_CHUNK candidates a call, the chunks of one group at once. The reply budget (`max_tokens`) follows from the
rubric's size: dimensions x candidates a call x tokens a dimension's reply takes (`reply_tokens`).
"""

from __future__ import annotations

import ast
import hashlib
import json
import logging
import re
import threading
import warnings
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import jinja2

from terminus.config import ROOT, load_yaml
from terminus.errors import TerminusError
from terminus.io import write_json_atomic
from terminus.judge.evidence import render_episode
from terminus.judge.rubric import Rubric
from terminus.models.openai_compat import MissingKeyError, OpenAIPolicy, PolicyError, api_key_from_env, endpoint_limits

log = logging.getLogger(__name__)
DEFAULT_PROMPTS = ROOT / "configs" / "judge" / "prompts.yaml"
GROUP_CHUNK = 4  # candidates per group call: 8 x 12 dimensions with reasons did not fit one reply
# One dimension's reply: `"name": {"reason": "<at most REASON_CHARS characters>", "score": n}`. The prompt caps the
# reason; tests/judge/test_judge_evidence.py tokenizes the worst case (the costliest text of real answers) against
# judge.reply_tokens.
REASON_CHARS = 160


class JudgeError(TerminusError, RuntimeError):
    """The judge cannot run at all: no key, endpoint unreachable, model unknown."""


class ParseError(ValueError):
    pass


@dataclass
class JudgeResult:
    scores: dict[str, float] = field(default_factory=dict)
    reasons: dict[str, str] = field(default_factory=dict)
    score: float | None = None  # the rubric's combination; None when unparseable
    unparseable: bool = False
    attempts: int = 0
    cached: bool = False
    raw: str = ""


def _json_candidates(text: str) -> list[str]:
    text = re.sub(r"```(?:json)?", "", text)
    starts = [m.start() for m in re.finditer(r"\{", text)]
    found = []
    for start in starts[:20]:
        depth, in_str, escape = 0, False, False
        for i in range(start, len(text)):
            ch = text[i]
            if in_str:
                escape = ch == "\\" and not escape
                if ch == '"' and not escape:
                    in_str = False
                continue
            if ch == '"':
                in_str = True
            elif ch == "{":
                depth += 1
            elif ch == "}":
                depth -= 1
                if depth == 0:
                    found.append(text[start : i + 1])
                    break
    return found


def loads_tolerant(text: str) -> object:
    """The first JSON object in a reply, forgiving fences, prose, trailing commas and Python literals."""
    if not isinstance(text, str):
        raise ParseError("reply is not text")
    for candidate in _json_candidates(text):
        for attempt in (candidate, re.sub(r",\s*([}\]])", r"\1", candidate)):
            try:
                return json.loads(attempt)
            except (json.JSONDecodeError, RecursionError):
                pass
            try:
                with warnings.catch_warnings():  # fuzzed replies hold invalid escapes: not our warning to show
                    warnings.simplefilter("ignore")
                    value = ast.literal_eval(attempt)
                if isinstance(value, dict):
                    return value
            except (ValueError, SyntaxError, MemoryError, RecursionError, TypeError):
                pass
    raise ParseError("no JSON object found in the reply")


def _score_of(value: object) -> float:
    if isinstance(value, dict):
        value = value.get("score", value.get("rating"))
    if isinstance(value, bool) or value is None:
        raise ParseError("a score is missing")
    if isinstance(value, str):
        match = re.search(r"-?\d+(?:\.\d+)?", value)
        if not match:
            raise ParseError(f"score {value!r} is not a number")
        value = float(match.group(0))
    if not isinstance(value, int | float) or value != value:  # NaN
        raise ParseError(f"score {value!r} is not a number")
    return float(value)


def parse_dimensions(obj: object, rubric: Rubric) -> tuple[dict[str, float], dict[str, str]]:
    """Scores (clamped to each scale) and reasons for every rubric dimension, or ParseError."""
    if not isinstance(obj, dict):
        raise ParseError("the verdict is not a JSON object")
    dims = obj.get("dimensions", obj)
    if not isinstance(dims, dict):
        raise ParseError("`dimensions` is not an object")
    scores, reasons = {}, {}
    for name, dim in rubric.dimensions.items():
        if name not in dims:
            raise ParseError(f"dimension {name!r} is missing")
        lo, hi = dim.scale
        scores[name] = min(max(_score_of(dims[name]), lo), hi)
        entry = dims[name]
        reasons[name] = str(entry.get("reason", "")) if isinstance(entry, dict) else ""
    return scores, reasons


def reply_tokens(rubric: Rubric, candidates: int, per_dimension: int, reasoning: int = 0) -> int:
    """The longest reply a call can need: every dimension of every candidate with its reason, plus what a reasoning
    model spends before it answers."""
    return len(rubric.dimensions) * candidates * per_dimension + reasoning


class LLMJudge:
    def __init__(
        self,
        rubric: Rubric,
        model: str,
        base_url: str | None = None,
        api_key_env: str | None = None,
        prompts: Path | None = None,
        cache_dir: Path | None = None,
        *,
        concurrency: int,
        retries: int = 2,
        max_tokens: int = 1024,
        policy=None,
        cache_namespace: str = "",
        request_timeout: float | None = None,
        max_retries: int | None = None,
        api: str | None = None,
        reasoning: bool | None = None,
        output_chars: int = 800,
    ) -> None:
        self.rubric = rubric
        self.output_chars = output_chars  # of each command's output shown (head and tail), beside the grounding
        self.model = model
        self.cache_namespace = cache_namespace  # e.g. a digest of a local model's weights: same name, new model
        self.retries = retries
        self.concurrency = concurrency
        self.cache_dir = Path(cache_dir) if cache_dir else None
        self.hits = self.misses = self.unparseable = 0
        self._lock = threading.Lock()
        raw = load_yaml(prompts or DEFAULT_PROMPTS, "judge prompts")
        env = jinja2.Environment(undefined=jinja2.StrictUndefined, keep_trailing_newline=False)
        env.globals["render"] = lambda episode: render_episode(episode, self.output_chars)
        env.globals["reason_chars"] = REASON_CHARS
        self.templates = {k: env.from_string(raw[k]) for k in ("system", "single", "group")}
        if policy is None:  # the key is checked here, before any episode is scored
            try:
                key = api_key_from_env(api_key_env, "judge")
                endpoint = {"request_timeout": request_timeout, "max_retries": max_retries, "api": api}
                limits = endpoint_limits({**endpoint, "reasoning": reasoning})
                policy = OpenAIPolicy(model, base_url=base_url, api_key=key, max_tokens=max_tokens, **limits)
            except MissingKeyError as err:
                raise JudgeError(str(err)) from None
            except PolicyError as err:
                raise JudgeError(f"judge: {err}") from err
        self.policy = policy

    @property
    def identity(self) -> dict:
        return {"model": self.model, "rubric": self.rubric.digest}

    # -- calls -------------------------------------------------------------------------------------------
    def _messages(self, kind: str, **values) -> list[dict]:
        prompt = self.templates[kind].render(rubric=self.rubric.for_prompt(), **values)
        return [
            {"role": "system", "content": self.templates["system"].render().strip()},
            {"role": "user", "content": prompt.strip()},
        ]

    def _cache_path(self, messages: list[dict], attempt: int) -> Path | None:
        if self.cache_dir is None:
            return None
        key = [self.model, self.cache_namespace, messages, attempt]
        digest = hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()
        return self.cache_dir / digest[:2] / f"{digest}.json"

    def _ask(self, messages: list[dict], attempt: int) -> tuple[str, bool]:
        path = self._cache_path(messages, attempt)
        if path is not None and path.is_file():
            with self._lock:
                self.hits += 1
            return json.loads(path.read_text())["reply"], True

        try:
            reply = self.policy.respond(messages, []).get("content") or ""
        except PolicyError as err:
            raise JudgeError(f"judge: {err}") from err
        with self._lock:
            self.misses += 1
        if path is not None:
            write_json_atomic(path, {"model": self.model, "reply": reply})
        return reply, False

    def _with_retries(self, messages: list[dict], parse) -> tuple[object, str, int, bool]:
        reply, cached = "", False
        for attempt in range(self.retries + 1):
            reply, cached = self._ask(messages, attempt)  # a retry is a new call (and its own cache entry)
            try:
                return parse(reply), reply, attempt + 1, cached
            except ParseError as err:
                log.info("judge reply unparseable (%s), attempt %d", err, attempt + 1)
        return None, reply, self.retries + 1, cached

    def score(self, query: str, reference: dict | None, candidate: dict) -> JudgeResult:
        messages = self._messages("single", query=query, reference=reference or {}, candidate=candidate)
        parsed, raw, attempts, cached = self._with_retries(
            messages, lambda text: parse_dimensions(loads_tolerant(text), self.rubric)
        )
        if parsed is None:
            with self._lock:
                self.unparseable += 1
            return JudgeResult(unparseable=True, attempts=attempts, cached=cached, raw=raw[-2000:])
        scores, reasons = parsed
        return JudgeResult(scores, reasons, self.rubric.combine(scores), False, attempts, cached, raw[-2000:])

    def score_group(self, query: str, reference: dict | None, candidates: list[dict]) -> list[JudgeResult]:
        """The candidates in chunks of at most GROUP_CHUNK, scored at once (within `concurrency`), in order."""
        return self.score_groups([(query, reference, candidates)])[0]

    def score_groups(self, groups: list[tuple[str, dict | None, list[dict]]]) -> list[list[JudgeResult]]:
        """(query, reference, candidates) groups, every chunk of every group asked at once (`concurrency` calls at a
        time), each group's results in its candidates' order: a GRPO step's groups are judged side by side, not one
        after another (4 groups of 10-30 s each a step)."""
        chunks = [
            (g, query, reference, candidates[i : i + GROUP_CHUNK])
            for g, (query, reference, candidates) in enumerate(groups)
            for i in range(0, len(candidates), GROUP_CHUNK)
        ]
        results: list[list[JudgeResult]] = [[] for _ in groups]
        if len(chunks) <= 1:
            done = [self._score_chunk(*chunk[1:]) for chunk in chunks]
        else:
            with ThreadPoolExecutor(max_workers=min(self.concurrency, len(chunks))) as pool:
                done = list(pool.map(lambda chunk: self._score_chunk(*chunk[1:]), chunks))
        for (g, *_), scored in zip(chunks, done, strict=True):
            results[g].extend(scored)
        return results

    def _score_chunk(self, query: str, reference: dict | None, candidates: list[dict]) -> list[JudgeResult]:
        messages = self._messages("group", query=query, reference=reference or {}, candidates=candidates)

        def parse(text: str) -> list[tuple[dict, dict]]:
            obj = loads_tolerant(text)
            entries = obj.get("candidates") if isinstance(obj, dict) else None
            if not isinstance(entries, list) or len(entries) != len(candidates):
                raise ParseError(f"expected {len(candidates)} candidates")
            ordered = sorted(entries, key=lambda e: e.get("index", 0) if isinstance(e, dict) else 0)
            return [parse_dimensions(e, self.rubric) for e in ordered]

        parsed, raw, attempts, cached = self._with_retries(messages, parse)
        if parsed is None:
            with self._lock:
                self.unparseable += len(candidates)
            return [
                JudgeResult(unparseable=True, attempts=attempts, cached=cached, raw=raw[-2000:]) for _ in candidates
            ]
        return [JudgeResult(s, r, self.rubric.combine(s), False, attempts, cached) for s, r in parsed]

    def score_many(self, items: list[tuple[str, dict | None, dict]]) -> list[JudgeResult]:
        """(query, reference, candidate) triples, `concurrency` calls at a time, in order.

        Identical triples are asked once and share the result: two threads asking the same question at once
        would both miss the cache, or one would hit it, as timing decides, and `hits` would not be reproducible.
        """
        keys = [json.dumps(item, sort_keys=True, default=str) for item in items]
        first = dict(zip(keys, items, strict=True))  # identical keys, identical items: any one serves
        unique = list(dict.fromkeys(keys))
        with ThreadPoolExecutor(max_workers=self.concurrency) as pool:
            results = dict(zip(unique, pool.map(lambda key: self.score(*first[key]), unique), strict=True))
        return [results[key] for key in keys]
