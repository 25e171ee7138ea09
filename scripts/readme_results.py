"""The measured figures of the README and the docs/ pages, from the committed tables (results/cached/ and
results/benchmarks/*.json): the results tables, and every figure in the prose.

    python scripts/readme_results.py          # print the tables
    python scripts/readme_results.py --write  # rewrite every page's tables and figures from the tables
    python scripts/readme_results.py --check  # exit 1 when a page differs (tests/test_readme.py runs it)

A table sits between `<!-- results:NAME -->` and `<!-- /results:NAME -->`, NAME one of `tables()`'s keys; each
figure in the prose between `<!-- f:NAME -->` and `<!-- /f -->`, NAME one of `figures()`'s keys. Any page may hold
any span (a figure is written wherever a reader meets it); README.md must hold the `smoke` table, its one table.
"""

from __future__ import annotations

import csv
import json
import re
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from terminus.analysis.training import seed_interval  # noqa: E402

# the pages that hold spans: the README and every page under docs/
PAGES = (ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")))
# learning.json's targets, as the README names them
TARGETS = {
    "easy_reward_check_passes": "the easy-reward GRPO check",
    "sft_train_fact_recall_every_seed": "SFT's fact recall on its training tasks",
    "sft_train_final_answer_rate_every_seed": "SFT's final-answer rate on its training tasks",
    "sft_final_answer_rate_every_seed": "SFT's held-out final-answer rate",
    "grpo_before_after_ci_above_zero": "GRPO's before/after difference on its tasks",
    "grpo_final_answer_rate_vs_sft_every_seed": "GRPO's final-answer rate minus SFT's",
    "grpo_held_out_recall_vs_sft": "GRPO's held-out recall minus SFT's",
    "environment_as_trained_every_seed": "the held-out episodes' environment lines",
}
CONTROL_TARGETS = {
    "copy_recall_every_seed": "SFT's held-out recall on every seed",
    "copy_swapped_recall_every_seed": "its recall with swapped tool output on every seed",
    "grpo_diff_above_zero": "GRPO's recall difference",
    "grpo_shuffled_contains_zero": "the shuffled-reward difference",
    "environment_as_trained_every_seed": "the held-out episodes' environment lines",
}
FIGURE = re.compile(r"<!-- f:(\w+) -->(.*?)<!-- /f -->", re.S)
TABLE = re.compile(r"<!-- results:(\w+) -->.*?<!-- /results:\1 -->", re.S)


def _interval(row: dict, key: str, digits: int = 2) -> str:
    if not row.get(key):
        return "n/a"
    fmt = f"{{:.{digits}f}}" if digits else "{:,.0f}"
    return (
        f"{fmt.format(float(row[key]))} [{fmt.format(float(row[key + '_lo']))}, {fmt.format(float(row[key + '_hi']))}]"
    )


def _money(row: dict, key: str) -> str:
    return "n/a" if not row.get(key) else f"${float(row[key]):.3f}"


def _verdict(tests: dict, row: dict) -> str:
    if row["subagent"] == "none" and row["context"] == "full":
        return "reference"
    test = tests.get((row["benchmark"], f"{row['main_agent']}__{row['subagent']}__{row['context']}"))
    if test is None:
        return "n/a"
    diff, lo, hi = (float(test[k]) for k in ("resolve_diff", "lo", "hi"))
    return f"{test['verdict']} ({diff:+.2f} [{lo:+.2f}, {hi:+.2f}])"


def smoke_rows(cached: Path) -> list[str]:
    """The smoke grid's arms (subagent x the main agent's context) by the metrics that rank them."""
    summary = list(csv.DictReader((cached / "eval" / "summary.csv").open()))
    tests = {
        (r["benchmark"], r["arm"]): r
        for r in csv.DictReader((cached / "eval" / "noninferiority.csv").open())
        if r["reference"].endswith("__none__full")
    }
    stamp = json.loads((cached / "training" / "summary.json").read_text())
    repair = [r for r in summary if r["benchmark"] == "repair"]
    execution = {r["subagent"]: r for r in summary if r["benchmark"] == "execution"}
    lines = [
        f"Smoke run, a check of the machinery (`results/cached/`, commit {stamp['git_commit'][:7]}; reader main "
        "agent, held-out synthetic repositories; n = tasks; rates with their 95% Wilson interval, other figures "
        "with the [smallest, largest] of their tasks' values below 10 tasks (no bootstrap at n = 3); dollars "
        "are the main agent's tokens at Claude Sonnet 4.5's cache-aware prices, as if it were the main agent; "
        "the summarizer is the untrained tiny model):",
        "",
        "| subagent | context | n | resolve rate (repair) | main-agent tokens | dollars (tokens) | vs none x full "
        "(resolve diff, margin 0.025) | usable answers (execution) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    order = {"none": 0, "scripted": 1, "base": 2, "sft": 3, "grpo": 4}
    for row in sorted(repair, key=lambda r: (order.get(r["subagent"], 9), r["context"] != "full", r["context"])):
        usable = (
            _interval(execution.get(row["subagent"], {}), "usable_answer_rate")
            if row["context"] == "full"
            else "as full"
        )
        cells = [
            row["subagent"], row["context"], row["n"], _interval(row, "resolve_rate"),
            _interval(row, "main_agent_tokens", 0), _money(row, "token_cost_usd"), _verdict(tests, row),
            usable if row["subagent"] != "none" else "n/a (no subagent)",
        ]  # fmt: skip
        lines.append(f"| {' | '.join(cells)} |")
    lines += [
        "",
        "At n = 3 every non-inferiority verdict is `inconclusive`: the interval on a resolve-rate difference of three "
        "tasks cannot exclude the margin, and that is the honest answer. Masking and summaries cut the reader's "
        "tokens but rewrite old messages, so the provider's prompt cache no longer serves the prefix: in dollars "
        "they cost more than the full context here, truncation and extraction less. docs/results.md has every "
        "metric.",
    ]
    return lines


def learning_rows(path: Path, cached: Path) -> list[str]:
    if not path.is_file():
        return ["Learning runs: not run yet (`make learning`)."]
    data = json.loads(path.read_text())
    # n and commit from the cached copies of each seed's training summary (what `make learning` copies there)
    stamps = [json.loads(p.read_text()) for p in sorted(cached.glob("seed-*/training__summary.json"))]
    commits = ", ".join(sorted({s["git_commit"][:7] for s in stamps})) or "n/a"
    held_out = ", ".join(str(s["sft"]["n"]) for s in stamps) or "n/a"
    lines = [
        f"Learning runs (`configs/learning.yaml`, seeds {data['seeds']}, commit {commits}; held-out repositories, "
        f"n = {held_out} tasks per seed; mean over seeds with its 95% t-interval):",
        "",
        "| model | final-answer rate | fact recall |",
        "|---|---|---|",
    ]
    for stage in ("base", "sft", "grpo"):
        cells = []
        for key in ("final_answer_rate", "fact_recall"):
            mean, half = seed_interval([r[stage][key] for r in data["per_seed"]])
            cells.append(f"{mean:.2f} ± {half:.2f}")
        lines.append(f"| {stage} | {' | '.join(cells)} |")
    lines += [
        "",
        "Per seed: SFT on its own training tasks; GRPO's tasks sampled before and after it (mean reward, paired "
        "difference with its 95% interval over tasks):",
        "",
        "| seed | SFT train-task fact recall | SFT train final-answer rate | GRPO tasks x samples | before | after "
        "| difference [95% CI] |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in data["per_seed"]:
        ba = r["grpo"].get("before_after") or {}
        low, high = ba.get("ci95") or [None, None]
        sft = r["sft"]
        cells = [str(r["seed"]), _num(sft.get("train_fact_recall")), _num(sft.get("train_final_answer_rate")),
                 f"{ba.get('tasks', 'n/a')} x {ba.get('samples_per_task', 'n/a')}", _num(ba.get("before")),
                 _num(ba.get("after")),
                 f"{_num(ba.get('diff'), '+.3f')} [{_num(low, '+.3f')}, {_num(high, '+.3f')}]"]  # fmt: skip
        lines.append(f"| {' | '.join(cells)} |")
    if all("held_out_turns" in r for r in data["per_seed"]):
        lines += [
            "",
            "Per seed on the held-out tasks, SFT (GRPO's before) -> GRPO (after): recall with its 95% t interval over "
            "tasks; where facts are lost (a command printed a required fact, over episodes; a required fact was "
            "printed, and a printed fact stated, over facts) and usable answers, over episodes, each with its 95% "
            "Wilson interval; mean turns:",
            "",
            "| seed | held-out recall, SFT -> GRPO | P(a command printed a fact) | P(fact printed) "
            "| P(stated given printed) | usable answers | mean turns |",
            "|---|---|---|---|---|---|---|",
        ]
        for r in data["per_seed"]:
            pair = {k: f"{_ci(r[k]['sft'])} -> {_ci(r[k]['grpo'])} (n = {r[k]['sft']['n']}, {r[k]['grpo']['n']})"
                    for k in ("p_command", "p_printed", "p_stated_given_printed", "usable_answer_rate")}  # fmt: skip
            pair["held_out_turns"] = f"{_num(r['held_out_turns']['sft'])} -> {_num(r['held_out_turns']['grpo'])}"
            sft, grpo = r["held_out_recall_sft"], r["held_out_recall_grpo"]
            lines.append(f"| {r['seed']} | {_ci(sft)} -> {_ci(grpo)} (n = {sft['n']}) | {pair['p_command']} "
                         f"| {pair['p_printed']} | {pair['p_stated_given_printed']} | {pair['usable_answer_rate']} "
                         f"| {pair['held_out_turns']} |")  # fmt: skip
    return lines


def _ci(rate: dict, spec: str = ".2f") -> str:
    """A {mean, lo, hi, n} rate as `mean [lo, hi]`."""
    return f"{_num(rate.get('mean'), spec)} [{_num(rate.get('lo'), spec)}, {_num(rate.get('hi'), spec)}]"


def controls_rows(path: Path) -> list[str]:
    """Issue 45's controls (benchmarks/copy_control.py) from learning.json, per seed, with their commit."""
    data = json.loads(path.read_text()) if path.is_file() else {}
    if "copy_control" not in data:
        return ["Learning controls: not run yet (`make learning-controls`)."]
    copy, grpo = data["copy_control"]["per_seed"], {r["seed"]: r for r in data["grpo_control"]["per_seed"]}
    lines = [
        f"Learning controls (`configs/copy-control.yaml`, `benchmarks/copy_control.py`, commit "
        f"{_commit(data['copy_control'])}; the copy-the-fact family, values fresh in every task; rates with their 95% "
        "t interval over "
        "tasks or conversations, n beside them):",
        "",
        "| seed | SFT held-out recall | swapped-output recall | expert's recall, real / swapped | fact-token "
        "accuracy, real / swapped | usable answers | GRPO start (greedy recall) | recall before -> after | difference "
        "| shuffled-reward difference | real minus shuffled, after | greedy recall real / swapped, start -> GRPO |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in copy:
        g = grpo.get(r["seed"], {})
        start = g.get("start", {})
        name = Path(start.get("checkpoint", "n/a")).name
        probed = start.get("probed_recall", {}).get(name)
        cells = [
            str(r["seed"]),
            f"{_ci(r['sft_recall'])} (n = {r['sft_recall']['n']})",
            f"{_ci(r['swapped_recall'])} (n = {r['swapped_recall']['n']})",
            f"{_num(r.get('expert_recall', {}).get('mean'))} / {_num(r.get('expert_swapped_recall', {}).get('mean'))}",
            f"{_num(r['fact_token_acc_real']['mean'])} / {_num(r['fact_token_acc_swapped']['mean'])} "
            f"(n = {r['fact_token_acc_real']['n']})",
            _num(r.get("usable_answer_rate")),
            f"{name} ({_num(probed)})",
            f"{_num(g.get('recall_before', {}).get('mean'))} -> {_num(g.get('recall_after', {}).get('mean'))} "
            f"(n = {g.get('recall_before', {}).get('n', 'n/a')} x {g.get('samples_per_task', 'n/a')})",
            _ci(g.get("diff", {}), "+.3f"),
            _ci(g.get("shuffled_diff", {}), "+.3f"),
            _ci(g.get("real_minus_shuffled", {}), "+.3f"),
            _greedy(g.get("greedy", {})),
        ]
        lines.append(f"| {' | '.join(cells)} |")
    targets = data.get("control_targets", {})
    lines += ["", "Targets: " + "; ".join(
        f"{CONTROL_TARGETS.get(k, k)} {t['target']}: {'met' if t['met'] else 'missed'}" for k, t in targets.items()
    ) + "."]  # fmt: skip
    return lines


def _controls_sentence(data: dict) -> str:
    """The controls in one sentence: L1's recall as is and swapped, L2's recall differences, over the seeds."""
    if "copy_control" not in data:
        return "not run yet"
    copy, grpo = data["copy_control"]["per_seed"], data["grpo_control"]["per_seed"]

    def means(rows: list[dict], key: str, spec: str = ".2f") -> str:
        return ", ".join(_num(r[key]["mean"], spec) for r in rows)

    above = sum(r["diff"]["lo"] > 0 for r in grpo)
    shuffled = sum(r["shuffled_diff"]["lo"] <= 0 <= r["shuffled_diff"]["hi"] for r in grpo)
    seeds = f"seed{'s' if len(copy) > 1 else ''} {', '.join(str(r['seed']) for r in copy)}"
    return (
        f"on the copy-the-fact family ({seeds}) the scripted expert recalls {means(copy, 'expert_recall')} of the "
        f"held-out facts and {means(copy, 'expert_swapped_recall')} with every tool output swapped for another "
        f"task's, so the fact path carries facts; the SFT model recalls {means(copy, 'sft_recall')} and "
        f"{means(copy, 'swapped_recall')} swapped; GRPO from an early checkpoint changes recall by "
        f"{means(grpo, 'diff', '+.2f')} (interval above 0 on {above} of {len(grpo)} seeds), and with shuffled rewards "
        f"by {means(grpo, 'shuffled_diff', '+.2f')} (interval containing 0 on {shuffled} of {len(grpo)})"
        + (
            "; after GRPO, the real reward's recall minus the shuffled one's is "
            f"{means(grpo, 'real_minus_shuffled', '+.2f')}"
            f" (interval above 0 on {sum(r['real_minus_shuffled']['lo'] > 0 for r in grpo)} of {len(grpo)})"
            if all("real_minus_shuffled" in r for r in grpo)
            else ""
        )
        + (
            "; held-out episodes ran in the training environment on "
            f"{sum(bool(r['environment']['same']) for r in copy)} of {len(copy)} seeds"
            if all("environment" in r for r in copy)
            else ""
        )
    )


def _greedy(greedy: dict) -> str:
    """`real / swapped` greedy recall of the GRPO control's start and end models, with n."""
    if not greedy:
        return "n/a"
    start, end = greedy["start"], greedy["grpo"]
    pairs = [f"{_num(m['recall']['mean'])} / {_num(m['swapped_recall']['mean'])}" for m in (start, end)]
    return f"{pairs[0]} -> {pairs[1]} (n = {end['recall']['n']})"


def _commit(data: dict) -> str:
    """The commit a result file's stamp names (`-dirty` kept), or that it has none."""
    stamp = data.get("stamp") or data  # a stamp file (results/cached/stamp.json) is its own stamp
    commit = stamp.get("commit") or data.get("git_commit")
    if not commit:
        return "unstamped"
    return commit[:7] + ("-dirty" if stamp.get("dirty") or commit.endswith("-dirty") else "")


def _num(value, spec: str = ".2f") -> str:
    return "n/a" if value is None else format(value, spec)


def tables() -> dict[str, str]:
    """Every results table, by the name its span carries."""
    cached = ROOT / "results" / "cached"
    return {
        "smoke": "\n".join(smoke_rows(cached)),
        "learning": "\n".join(learning_rows(ROOT / "results" / "benchmarks" / "learning.json", cached / "learning")),
        "controls": "\n".join(controls_rows(ROOT / "results" / "benchmarks" / "learning.json")),
    }


def _minutes(walls: list[float]) -> str:
    """A range only where the measured runs differ: one run (or equal ones) is one figure, never "~24-24"."""
    low, high = round(min(walls) / 60), round(max(walls) / 60)
    return f"~{low} min" if low == high else f"~{low}-{high} min"


def _json(name: str) -> dict:
    return json.loads((ROOT / "results" / "benchmarks" / f"{name}.json").read_text())


def _k(tokens: float) -> str:
    return f"{tokens / 1000:.1f}k"


def _ms(value: float) -> str:
    return f"{value:.{0 if value >= 20 else 1}f} ms"


def _pct(x: float) -> str:
    return f"{100 * x:.0f}%"


def _smoke_repair_sentence(cached: Path) -> str:
    rows = {
        r["subagent"]: r
        for r in csv.DictReader((cached / "eval" / "summary.csv").open())
        if r["benchmark"] == "repair" and r.get("context", "full") == "full"
    }

    def outcome(sub: str) -> str:
        r = rows[sub]
        n = int(r["n"])
        return f"{round(float(r['resolve_rate']) * n)} of {n} ({_k(float(r['main_agent_tokens']))} tokens)"

    return (
        f"with the SFT tiny model as subagent the reader resolves {outcome('sft')}, with GRPO's {outcome('grpo')}, "
        f"against {outcome('scripted')} with the scripted subagent and {outcome('none')} without a subagent"
    )


def figures() -> dict[str, str]:
    """Every figure the README's prose states, by name, as the committed tables give it."""
    cached = ROOT / "results" / "cached"
    out: dict[str, str] = {}
    repro = _json("reproducibility")
    walls = sorted(repro["wall_s"].values())
    out["smoke_minutes"] = _minutes(walls)
    out["smoke_runs_timed"] = "one run" if len(walls) == 1 else f"{len(walls)} runs"
    dag = _json("dag_times")  # the whole smoke DAG on a quiet machine, rule by rule (benchmarks/dag_times.py)
    out["dag_minutes"] = _minutes([dag["total_s"]])
    out["dag_cores"] = f"{dag['cores']} cores"
    out["repro_commit"] = repro["git_commit"][:7]
    out["repro_identical"] = f"{len(repro['identical'])} files identical"
    out["repro_differing"] = "none differing" if not repro["differing"] else f"{len(repro['differing'])} differing"
    smoke = json.loads((cached / "training" / "summary.json").read_text())
    out["smoke_sft_final"] = f"{smoke['sft']['final_answer_rate']:.2f}"
    out["smoke_grpo_final"] = f"{smoke['grpo']['final_answer_rate']:.2f}"
    out["smoke_grpo_steps"] = str(smoke["grpo"]["steps"])
    seeds = _json("smoke_seeds")
    out["smoke_seeds"] = ", ".join(
        f"seed {r['seed']} {r['sft']['final_answer_rate']:.2f} -> {r['grpo']['final_answer_rate']:.2f}"
        for r in seeds["runs"]
    )
    out["smoke_repair"] = _smoke_repair_sentence(cached)
    # each figure's commit (issue 45): what made the smoke tables, the DAG's time, the learning runs, the controls
    runs = [json.loads(p.read_text()) for p in sorted((cached / "learning").glob("seed-*/training__summary.json"))]
    learning_commits = sorted({_commit(r) for r in runs}) or ["not run"]
    control = _json("learning") if (ROOT / "results" / "benchmarks" / "learning.json").is_file() else {}
    out["controls_summary"] = _controls_sentence(control)
    # a seed from nothing: the learning check's run (benchmarks/copy_control.py --check), else the controls' own
    check_file = ROOT / "results" / "benchmarks" / "learning_check.json"
    timed = json.loads(check_file.read_text())["wall_s"].values() if check_file.is_file() else []
    timed = list(timed) or [r.get("wall_s") for r in control.get("copy_control", {}).get("per_seed", [])]
    walls = [sum(w.values()) for w in timed if w]
    out["control_minutes"] = _minutes(walls) if walls else "n/a (not timed)"
    out["figure_commits"] = (
        f"smoke tables {_commit(json.loads((cached / 'stamp.json').read_text()))}, smoke DAG time {_commit(dag)}, "
        f"learning runs {', '.join(learning_commits)}, learning controls "
        f"{_commit(control['copy_control']) if 'copy_control' in control else 'not run'}"
    )
    learning = _json("learning")
    mean = {
        (stage, key): statistics.fmean(r[stage][key] for r in learning["per_seed"])
        for stage in ("sft", "grpo")
        for key in ("final_answer_rate", "fact_recall")
    }
    out["learning_sft_final"] = f"{mean['sft', 'final_answer_rate']:.2f}"
    out["learning_sft_recall"] = _pct(mean["sft", "fact_recall"])
    out["learning_grpo_final"] = f"{mean['grpo', 'final_answer_rate']:.2f}"
    out["learning_base_final"] = (
        f"{statistics.fmean(r['base']['final_answer_rate'] for r in learning['per_seed']):.2f}"
    )
    above = sum(bool((r["grpo"].get("before_after") or {}).get("ci95", [0])[0] > 0) for r in learning["per_seed"])
    out["learning_grpo_reward"] = (
        "does not raise its reward measurably (no seed's interval above 0)"
        if not above
        else f"raises its reward on {above} of {len(learning['per_seed'])} seeds (interval above 0)"
    )
    train = [r["sft"].get("train_fact_recall") for r in learning["per_seed"]]
    out["learning_sft_train_recall"] = "n/a" if None in train else _pct(statistics.fmean(train))
    out["learning_targets"] = "; ".join(
        f"{TARGETS.get(name, name)} {t['target']}: {'met' if t['met'] else 'missed'}"
        for name, t in learning["targets"].items()
    )
    seed = sorted((cached / "learning").glob("seed-*"))[0]
    out["learning_grpo_steps"] = str(json.loads((seed / "training__summary.json").read_text())["grpo"]["steps"])
    counts = json.loads((seed / "sft-data__counts.json").read_text())
    originals = counts["train"] - counts["augmented"] - counts.get("decision_copies", 0)
    out["learning_expert"] = f"~{round(originals, -1):.0f}"
    fit = _json("sft_fit")
    out["sft_fit_tasks"] = str(fit["tasks"])
    out["sft_fit_epochs"] = f"{fit['epochs']:.0f}"
    out["sft_fit_overfit"] = _pct(fit["overfit"]["fact_recall"])
    out["sft_fit_learning"] = _pct(fit["learning_sft"]["fact_recall"])
    easy = _json("easy_reward")
    out["easy_passed"] = "passes" if easy["passed"] else "fails"
    out["easy_directions"] = "; ".join(
        f"{name}: r = {d['correlation']:.2f}, reward {d['first']:.2f} to {d['last']:.2f}"
        for name, d in easy["directions"].items()
    )
    probe = _json("learning_probe")["models"]
    out["probe_train_exact"] = _pct(probe["sft"]["train"]["exact_command"])
    out["probe_validation_exact"] = _pct(probe["sft"]["validation"]["exact_command"])
    out["probe_recall_before"] = f"{probe['sft']['held_out']['fact_recall']:.2f}"
    out["probe_recall_decision"] = f"{probe['sft-decision']['held_out']['fact_recall']:.2f}"
    out["probe_train_exact_decision"] = _pct(probe["sft-decision"]["train"]["exact_command"])
    savings = _json("token_savings")
    by = savings["by_subagent"]
    out["savings_ratio"] = f"{savings['ratio']:.2f}x"
    out["savings_tokens"] = f"{_k(by['scripted']['tokens'])} vs {_k(by['none']['tokens'])}"
    out["savings_resolve"] = f"{by['scripted']['resolve']:.1f} vs {by['none']['resolve']:.1f}"
    out["savings_direct"] = f"{by['none']['direct_terminal_calls']:.1f}"
    out["savings_silent"] = (
        f"{_k(by['silent']['tokens'])} ({by['silent']['tokens'] / by['scripted']['tokens']:.1f}x scripted)"
    )
    out["savings_tiny"] = _k(by["tiny-base"]["tokens"])
    overhead = _json("sandbox_overhead")
    ms = {name: _ms(overhead[name]["median_overhead_ms"]) for name in ("local", "bwrap", "docker")}
    out["overhead"] = ", ".join(f"{name} {value}" for name, value in ms.items())
    out["overhead_bwrap"], out["overhead_docker"] = ms["bwrap"], ms["docker"]
    compression = _json("summary_compression")
    out["compression"] = f"{100 * compression['ratio_median']:.1f}%"
    out["compression_recall"] = f"{compression['fact_recall']:.1f}"
    served = _json("served_eval")
    out["served_speedup"] = f"{served['speedup_c16_vs_c1']:.1f}x"
    out["served_vs_reload"] = f"{served['speedup_vs_reload']:.0f}x"
    batching = _json("rollout_batching")
    speedups = f"{batching['speedup']:.1f}x faster, generation {batching['generation_speedup']:.2f}x"
    out["batching"] = f"{batching['episodes']} episodes {speedups}"
    out["batching_generation"] = f"{batching['generation_speedup']:.2f}x"
    throughput = _json("rollout_throughput")
    out["throughput"] = f"{throughput['speedup_32']:.0f}x"
    out["throughput_32"] = f"{throughput['speedup_32']:.2f}x"
    out["throughput_wait"] = f"{throughput['wait_s']:.0f} s"
    out["throughput_cpu"] = f"{throughput['cpu_bound']['speedup_32']:.1f}x"
    from terminus.config import load_config
    from terminus.eval.cells import cell_names, cell_needs_gpu

    paper = load_config(ROOT / "configs" / "paper.yaml")["eval"]
    names = cell_names(paper)
    out["paper_cells"] = str(len(names))
    out["paper_gpu_cells"] = str(sum(cell_needs_gpu(paper, n) for n in names))
    return out


def render(text: str, page: str = "README.md", values: dict[str, str] | None = None) -> str:
    """A page with its tables and every figure as the committed tables give them; a span naming a figure or a
    table that this script does not make is an error."""
    values = figures() if values is None else values
    made = tables()
    unknown = sorted({m.group(1) for m in FIGURE.finditer(text)} - set(values))
    unknown += sorted({m.group(1) for m in TABLE.finditer(text)} - set(made))
    if unknown:
        raise SystemExit(f"{page} names figures or tables that scripts/readme_results.py does not make: {unknown}")
    text = FIGURE.sub(lambda m: f"<!-- f:{m.group(1)} -->{values[m.group(1)]}<!-- /f -->", text)
    return TABLE.sub(lambda m: f"<!-- results:{(n := m.group(1))} -->\n{made[n]}\n<!-- /results:{n} -->", text)


def main() -> int:
    if "--check" not in sys.argv and "--write" not in sys.argv:
        print("\n\n".join(tables().values()))
        return 0
    readme = PAGES[0].read_text()
    if "<!-- results:smoke -->" not in readme:
        print("README.md has no <!-- results:smoke --> ... <!-- /results:smoke --> table")
        return 1
    values, failed = figures(), False
    for path in PAGES:
        page = str(path.relative_to(ROOT))
        text = path.read_text()
        fresh = render(text, page, values)
        if fresh == text:
            continue
        if "--write" in sys.argv:
            path.write_text(fresh)
            continue
        stale = [m.group(0) for m in FIGURE.finditer(text) if m.group(0) not in fresh]
        print(f"{page}'s figures are out of date: run `python scripts/readme_results.py --write`")
        print("\n".join(f"  {s}" for s in stale) or "  (a results table)")
        failed = True
    return int(failed)


if __name__ == "__main__":
    sys.exit(main())
