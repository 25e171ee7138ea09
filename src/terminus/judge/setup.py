"""The LLM judge and the Scorer an experiment config names, built one way for every stage (`terminus judge`,
`judge-validity`, `eval`, and GRPO's reward): the judge an endpoint (`judge.endpoint`), or a local model served by
vLLM for as long as the block runs (`judge.serve`, keyed in the cache by its weights), or none (fact checker only);
its calls cached in the run's one cache folder, results/<run>/judge/cache."""

from __future__ import annotations

import contextlib
import hashlib
from collections.abc import Iterator
from pathlib import Path

from terminus.config import run_dir
from terminus.judge.llm import JudgeError, LLMJudge
from terminus.judge.rubric import load_rubric
from terminus.judge.scorer import Scorer, ScorerConfig


def judge_cache(cfg: dict) -> Path:
    """Where every stage of a run caches its judge calls (a rerun, of any stage, asks only what is not there)."""
    return run_dir(cfg) / "judge" / "cache"


@contextlib.contextmanager
def scorer_from_config(
    cfg: dict,
    tasks: dict,
    *,
    references: dict[str, dict] | None = None,
    no_llm: bool = False,
    per_episode: bool = False,
) -> Iterator[Scorer]:
    """The run's Scorer (`judge.scorer`'s weights, the LLM judge of `judge_from_config` unless `no_llm`, and
    `judge.group`) over `tasks`, for as long as the block runs. `per_episode`: the caller scores each episode as it
    ends (eval), so no group is ever more than one episode and the single-candidate prompt is the one asked."""
    config = ScorerConfig.load(cfg["judge"]["scorer"])
    with judge_from_config(cfg, no_llm) as judge:
        group = cfg["judge"]["group"] and not per_episode
        yield Scorer(tasks=tasks, judge=judge, config=config, references=references or {}, group=group)


@contextlib.contextmanager
def judge_from_config(cfg: dict, no_llm: bool = False) -> Iterator[LLMJudge | None]:
    """Raises the project's own errors (RubricError, JudgeError, ServeError), which the CLI prints in one line."""
    cache_dir = judge_cache(cfg)
    judge_cfg = cfg["judge"]
    rubric = load_rubric(judge_cfg["rubric"])
    endpoint, serve = judge_cfg.get("endpoint"), judge_cfg.get("serve")
    common = {
        "prompts": Path(judge_cfg["prompts"]),
        "cache_dir": cache_dir,
        "concurrency": judge_cfg["concurrency"],
        "max_tokens": judge_cfg["max_tokens"],
        "request_timeout": judge_cfg["request_timeout"],
        "max_retries": judge_cfg["max_retries"],
    }
    if no_llm or (not endpoint and not serve):
        yield None
    elif endpoint:
        if not endpoint.get("model"):
            raise JudgeError("judge.endpoint needs a model")
        yield LLMJudge(rubric, endpoint["model"], endpoint.get("base_url"), endpoint.get("api_key_env"), **common)
    else:
        from terminus.models.serve import vllm_server

        if not Path(serve).is_dir():
            raise JudgeError(f"judge.serve: model folder {serve} does not exist (build it with `terminus tiny-model`)")
        weights = sorted(Path(serve).glob("*.safetensors"))
        digest = hashlib.sha256(b"".join(p.read_bytes() for p in weights)).hexdigest()[:16]
        log = cache_dir.parent / "vllm-server.log"
        with vllm_server(serve, served_name=Path(serve).name, log=log) as url:
            yield LLMJudge(rubric, Path(serve).name, base_url=url, cache_namespace=digest, **common)
