"""The LLM judge an experiment config names, built one way for every stage (`terminus judge`, `judge-validity`,
`eval`, and GRPO's reward): an endpoint (`judge.endpoint`), or a local model served by vLLM for as long as the
block runs (`judge.serve`, keyed in the cache by its weights), or none (fact checker only); and the Scorer around
it (`scorer_from_config`), built one way too. `eval` reads its own judge (`eval.judge`, `judge_settings(cfg,
"eval")`): the evaluation metric is not the training reward, and its judge is none of the subagents it grades."""

from __future__ import annotations

import contextlib
import hashlib
from collections.abc import Iterator
from pathlib import Path

from terminus.config import run_dir
from terminus.judge.llm import GROUP_CHUNK, JudgeError, LLMJudge, reply_tokens
from terminus.judge.rubric import Rubric, load_rubric
from terminus.judge.scorer import Scorer, ScorerConfig
from terminus.models.serve import vllm_server

STAGES = ("judge", "eval")  # whose judge: GRPO's reward and the CLI's judge commands, or the evaluation's


def judge_settings(cfg: dict, stage: str = "judge") -> dict:
    """The `judge:` section, or for `eval` that section under `eval.judge`: its keys set there win, its endpoint is
    its own (null: the fact checker only), and it serves no local model."""
    if stage not in STAGES:
        raise ValueError(f"unknown judge stage {stage!r} ({', '.join(STAGES)})")
    if stage == "judge":
        return cfg["judge"]
    own = cfg["eval"].get("judge") or {}
    merged = cfg["judge"] | {k: v for k, v in own.items() if v is not None} | {"serve": None, "group": False}
    return merged | {"endpoint": own.get("endpoint")}


def max_tokens(judge_cfg: dict, rubric: Rubric) -> int:
    """The reply budget: derived from the rubric's size; a configured one that a worst-case reply overruns is an
    error, not a reply cut off and parsed as nothing."""
    candidates = GROUP_CHUNK if judge_cfg.get("group") else 1
    needed = reply_tokens(rubric, candidates, judge_cfg["reply_tokens"], judge_cfg["reasoning_tokens"])
    configured = judge_cfg.get("max_tokens")
    if configured is None:
        return needed
    if configured < needed:
        raise JudgeError(
            f"judge.max_tokens {configured} is below the longest reply the rubric asks for: {len(rubric.dimensions)} "
            f"dimensions x {candidates} candidate(s) a call x reply_tokens {judge_cfg['reply_tokens']} + "
            f"reasoning_tokens {judge_cfg['reasoning_tokens']} = {needed} (set it to null to derive it)"
        )
    return configured


def _model_name(name: str | None) -> str:
    return (name or "").rsplit("/", 1)[-1].strip().lower()  # `openai/gpt-5` and `gpt-5` name one model


def check_judge_apart(eval_cfg: dict) -> None:
    """The eval judge is none of the subagents under test: a model grading its own episodes is no metric."""
    endpoint = (eval_cfg.get("judge") or {}).get("endpoint") or {}
    judge = _model_name(endpoint.get("model"))
    for sub in eval_cfg["subagents"]:
        if judge and sub.get("model") and _model_name(sub["model"]) == judge:
            raise JudgeError(
                f"eval.judge.endpoint's model {endpoint['model']!r} is the model of the subagent under test "
                f"{sub['name']!r}: a subagent cannot judge its own episodes; name a judge of another model family"
            )


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
    stage: str = "judge",
) -> Iterator[Scorer]:
    """The Scorer an experiment config names (`judge.scorer`, `judge.group`; `eval.judge` for stage "eval"), with
    its judge alive for the block.

    `group` overrides `judge.group`: `eval` scores one episode at a time (False). The scorer config is read before
    any judge is served, so a bad one fails fast."""
    settings = judge_settings(cfg, stage)
    config = ScorerConfig.load(settings["scorer"])
    group = settings["group"] if group is None else group
    with judge_from_config(cfg, cache_dir, no_llm, stage=stage) as judge:
        yield Scorer(tasks=tasks, judge=judge, config=config, references=references or {}, group=group)


@contextlib.contextmanager
def judge_from_config(
    cfg: dict, cache_dir: Path, no_llm: bool = False, *, stage: str = "judge"
) -> Iterator[LLMJudge | None]:
    """Raises the project's own errors (RubricError, JudgeError, ServeError), which the CLI prints in one line."""
    judge_cfg = judge_settings(cfg, stage)
    rubric = load_rubric(judge_cfg["rubric"])
    endpoint, serve = judge_cfg.get("endpoint"), judge_cfg.get("serve")
    if no_llm or (not endpoint and not serve):
        yield None
        return
    if stage == "eval":
        check_judge_apart(cfg["eval"])
    common = {
        "prompts": Path(judge_cfg["prompts"]),
        "cache_dir": Path(cache_dir),
        "concurrency": judge_cfg["concurrency"],
        "max_tokens": max_tokens(judge_cfg, rubric),
        "output_chars": judge_cfg["output_chars"],
        "request_timeout": judge_cfg.get("request_timeout"),
        "max_retries": judge_cfg.get("max_retries"),
    }
    if endpoint:
        if not endpoint.get("model"):
            raise JudgeError(f"{'eval.judge' if stage == 'eval' else 'judge'}.endpoint needs a model")
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
