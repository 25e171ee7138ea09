"""The LLM judge an experiment config names, built one way for every stage (`terminus judge`, `judge-validity`,
`eval`, and GRPO's reward): an endpoint (`judge.endpoint`), or a local model served by vLLM for as long as the
block runs (`judge.serve`, keyed in the cache by its weights), or none (fact checker only); and the Scorer around
it (`scorer_from_config`), built one way too."""

from __future__ import annotations

import contextlib
import hashlib
from collections.abc import Iterator
from pathlib import Path

from terminus.config import run_dir
from terminus.judge.llm import JudgeError, LLMJudge
from terminus.judge.rubric import load_rubric
from terminus.judge.scorer import Scorer, ScorerConfig
from terminus.models.serve import vllm_server


def judge_cache_dir(cfg: dict) -> Path:
    """Where the CLI's judge commands and `eval` keep the judge's cache: one per run, shared between them."""
    return run_dir(cfg) / "judge" / "cache"


@contextlib.contextmanager
def scorer_from_config(
    cfg: dict,
    tasks: dict,
    cache_dir: Path,
    *,
    no_llm: bool = False,
    references: dict | None = None,
    group: bool | None = None,
) -> Iterator[Scorer]:
    """The Scorer an experiment config names (`judge.scorer`, `judge.group`), with its judge alive for the block.

    `group` overrides `judge.group`: `eval` scores one episode at a time (False). The scorer config is read before
    any judge is served, so a bad one fails fast."""
    config = ScorerConfig.load(cfg["judge"]["scorer"])
    group = cfg["judge"]["group"] if group is None else group
    with judge_from_config(cfg, cache_dir, no_llm) as judge:
        yield Scorer(tasks=tasks, judge=judge, config=config, references=references or {}, group=group)


@contextlib.contextmanager
def judge_from_config(cfg: dict, cache_dir: Path, no_llm: bool = False) -> Iterator[LLMJudge | None]:
    """Raises the project's own errors (RubricError, JudgeError, ServeError), which the CLI prints in one line."""
    judge_cfg = cfg["judge"]
    rubric = load_rubric(judge_cfg["rubric"])
    endpoint, serve = judge_cfg.get("endpoint"), judge_cfg.get("serve")
    common = {
        "prompts": Path(judge_cfg["prompts"]),
        "cache_dir": Path(cache_dir),
        "concurrency": judge_cfg["concurrency"],
        "max_tokens": judge_cfg["max_tokens"],
        "request_timeout": judge_cfg.get("request_timeout"),
        "max_retries": judge_cfg.get("max_retries"),
    }
    if no_llm or (not endpoint and not serve):
        yield None
    elif endpoint:
        if not endpoint.get("model"):
            raise JudgeError("judge.endpoint needs a model")
        served = {"api": endpoint.get("api"), "reasoning": endpoint.get("reasoning")}  # as the provider serves it
        yield LLMJudge(
            rubric, endpoint["model"], endpoint.get("base_url"), endpoint.get("api_key_env"), **common, **served
        )
    else:
        if not Path(serve).is_dir():
            raise JudgeError(f"judge.serve: model folder {serve} does not exist (build it with `terminus tiny-model`)")
        weights = sorted(Path(serve).glob("*.safetensors"))
        digest = hashlib.sha256(b"".join(p.read_bytes() for p in weights)).hexdigest()[:16]
        log = Path(cache_dir).parent / "vllm-server.log"
        with vllm_server(serve, served_name=Path(serve).name, log=log) as url:
            yield LLMJudge(rubric, Path(serve).name, base_url=url, cache_namespace=digest, **common)
