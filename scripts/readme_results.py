"""The README's results table, from the committed tables (results/cached/ and results/benchmarks/learning.json).

    python scripts/readme_results.py          # print the table
    python scripts/readme_results.py --check  # exit 1 when README.md's table differs (tests/test_readme.py runs it)

The table sits in README.md between `<!-- results -->` and `<!-- /results -->`.
"""

from __future__ import annotations

import csv
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from terminus.analysis import seed_interval  # noqa: E402

START, END = "<!-- results -->", "<!-- /results -->"


def _interval(row: dict, key: str, digits: int = 2) -> str:
    if not row.get(key):
        return "n/a"
    fmt = f"{{:.{digits}f}}" if digits else "{:,.0f}"
    return (
        f"{fmt.format(float(row[key]))} [{fmt.format(float(row[key + '_lo']))}, {fmt.format(float(row[key + '_hi']))}]"
    )


def smoke_rows(cached: Path) -> list[str]:
    rows = {(r["subagent"], r["benchmark"]): r for r in csv.DictReader((cached / "eval" / "summary.csv").open())}
    stamp = json.loads((cached / "training" / "summary.json").read_text())
    lines = [
        f"Smoke run (`results/cached/`, commit {stamp['git_commit'][:7]}; reader main agent, held-out synthetic "
        "repositories; 95% bootstrap intervals over tasks):",
        "",
        "| subagent | main-agent tokens (repair) | resolve rate (repair) | fact recall of its answers (execution) |",
        "|---|---|---|---|",
    ]
    for sub in ("none", "scripted", "base", "sft", "grpo"):
        repair, execution = rows.get((sub, "repair"), {}), rows.get((sub, "execution"), {})
        recall = "n/a (no subagent)" if sub == "none" else _interval(execution, "fact_recall")
        lines.append(
            f"| {sub} | {_interval(repair, 'main_agent_tokens', 0)} | {_interval(repair, 'resolve_rate')} | {recall} |"
        )
    return lines


def learning_rows(path: Path) -> list[str]:
    if not path.is_file():
        return ["Learning runs: not run yet (`make learning`)."]
    data = json.loads(path.read_text())
    lines = [
        f"Learning runs (`configs/learning.yaml`, seeds {data['seeds']}, held-out repositories; mean over seeds "
        "with its 95% t-interval):",
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
    rises = [r["grpo"]["reward_last_quarter"] - r["grpo"]["reward_first_quarter"] for r in data["per_seed"]]
    lines += [
        "",
        f"GRPO's Scorer reward, last quarter minus first quarter of its steps, per seed: "
        f"{', '.join(f'{x:+.3f}' for x in rises)}.",
    ]
    return lines


def table() -> str:
    lines = smoke_rows(ROOT / "results" / "cached")
    lines += ["", *learning_rows(ROOT / "results" / "benchmarks" / "learning.json")]
    return "\n".join(lines)


def main() -> int:
    text = table()
    if "--check" not in sys.argv:
        print(text)
        return 0
    readme = (ROOT / "README.md").read_text()
    if START not in readme or END not in readme:
        print(f"README.md has no {START} ... {END} block")
        return 1
    current = readme.split(START, 1)[1].split(END, 1)[0].strip()
    if current != text.strip():
        print("README.md's results table is out of date: paste the output of `python scripts/readme_results.py`")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
