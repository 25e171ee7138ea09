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
from terminus.runspec import typed
from terminus.settings import Config, Eval, Judge, filled

STAGES = ("judge", "eval")  # whose judge: GRPO's reward and the CLI's judge commands, or the evaluation's


def _typed(cfg: Config | dict) -> Config:
    """A loaded config as the typed one (a caller may hold the filled dict: a script or test that changed it)."""
    return cfg if isinstance(cfg, Config) else typed(cfg)


def judge_settings(cfg: Config | dict, stage: str = "judge") -> Judge:
    """The `judge:` section, or for `eval` that section under `eval.judge`: its keys set there win, its endpoint is
    its own (null: the fact checker only), and it serves no local model."""
    if stage not in STAGES:
        raise ValueError(f"unknown judge stage {stage!r} ({', '.join(STAGES)})")
    cfg = _typed(cfg)
    if stage == "judge":
        return cfg.judge
    own = cfg.eval.judge
    kept = {k: getattr(own, k) for k in ("scorer", "output_chars", "reasoning_tokens") if getattr(own, k) is not None}
    return cfg.judge.model_copy(update=kept | {"serve": None, "group": False, "endpoint": own.endpoint})


def max_tokens(judge_cfg: Judge, rubric: Rubric) -> int:
    """The reply budget: derived from the rubric's size; a configured one that a worst-case reply overruns is an
    error, not a reply cut off and parsed as nothing."""
    candidates = GROUP_CHUNK if judge_cfg.group else 1
    needed = reply_tokens(rubric, candidates, judge_cfg.reply_tokens, judge_cfg.reasoning_tokens)
    configured = judge_cfg.max_tokens
    if configured is None:
        return needed
    if configured < needed:
        raise JudgeError(
            f"judge.max_tokens {configured} is below the longest reply the rubric asks for: {len(rubric.dimensions)} "
            f"dimensions x {candidates} candidate(s) a call x reply_tokens {judge_cfg.reply_tokens} + "
            f"reasoning_tokens {judge_cfg.reasoning_tokens} = {needed} (set it to null to derive it)"
        )
    return configured


def _model_name(name: str | None) -> str:
    return (name or "").rsplit("/", 1)[-1].strip().lower()  # `openai/gpt-5` and `gpt-5` name one model


def check_judge_apart(eval_cfg: Eval) -> None:
    """The eval judge is none of the subagents under test: a model grading its own episodes is no metric."""
    endpoint = eval_cfg.judge.endpoint
    judge = _model_name(endpoint.model if endpoint else None)
    for sub in eval_cfg.subagents:
        if judge and sub.model and _model_name(sub.model) == judge:
            raise JudgeError(
                f"eval.judge.endpoint's model {endpoint.model!r} is the model of the subagent under test "
                f"{sub.name!r}: a subagent cannot judge its own episodes; name a judge of another model family"
            )


def judge_cache_dir(cfg: dict) -> Path:  # the filled dict: where it was loaded (`_base`) names the run folder
    """Where the CLI's judge commands and `eval` keep the judge's cache: one per run, shared between them."""
    return run_dir(cfg) / "judge" / "cache"


@contextlib.contextmanager
def scorer_from_config(
    cfg: Config | dict,
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
    config = ScorerConfig.load(settings.scorer)
    group = settings.group if group is None else group
    with judge_from_config(cfg, cache_dir, no_llm, stage=stage) as judge:
        yield Scorer(tasks=tasks, judge=judge, config=config, references=references or {}, group=group)


@contextlib.contextmanager
def judge_from_config(
    cfg: Config | dict, cache_dir: Path, no_llm: bool = False, *, stage: str = "judge"
) -> Iterator[LLMJudge | None]:
    """Raises the project's own errors (RubricError, JudgeError, ServeError), which the CLI prints in one line."""
    cfg = _typed(cfg)
    judge_cfg = judge_settings(cfg, stage)
    rubric = load_rubric(judge_cfg.rubric)
    endpoint, serve = judge_cfg.endpoint, judge_cfg.serve
    if no_llm or (not endpoint and not serve):
        yield None
        return
    if stage == "eval":
        check_judge_apart(cfg.eval)
    common = {
        "prompts": Path(judge_cfg.prompts),
        "cache_dir": Path(cache_dir),
        "concurrency": judge_cfg.concurrency,
        "max_tokens": max_tokens(judge_cfg, rubric),
        "output_chars": judge_cfg.output_chars,
        "request_timeout": judge_cfg.request_timeout,
        "max_retries": judge_cfg.max_retries,
    }
    if endpoint:
        if not endpoint.model:
            raise JudgeError(f"{'eval.judge' if stage == 'eval' else 'judge'}.endpoint needs a model")
        # as the provider serves it; what the file leaves out stays unset (the eval judge's api and reasoning)
        written = filled(endpoint)
        served = {"api": written.get("api"), "reasoning": written.get("reasoning")}
        yield LLMJudge(rubric, endpoint.model, endpoint.base_url, endpoint.api_key_env, **common, **served)
    else:
        if not Path(serve).is_dir():
            raise JudgeError(f"judge.serve: model folder {serve} does not exist (build it with `terminus tiny-model`)")
        weights = sorted(Path(serve).glob("*.safetensors"))
        digest = hashlib.sha256(b"".join(p.read_bytes() for p in weights)).hexdigest()[:16]
        log = Path(cache_dir).parent / "vllm-server.log"
        with vllm_server(serve, served_name=Path(serve).name, log=log) as url:
            yield LLMJudge(rubric, Path(serve).name, base_url=url, cache_namespace=digest, **common)
