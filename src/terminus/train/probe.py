"""Does a trained model read its observations? A probe of the one decision every episode turns on: the command
it runs after listing the repository (which toolchain, which folder), on an SFT dataset's conversations.

For each split of the dataset (train: conversations the model was trained on; validation: other repositories):

- `program_accuracy`: greedy decoding runs the expert's program (cmake, cargo, go, node, python3, ...);
- `root_accuracy`: ... in the expert's folder (`cd <root> &&`, or none at the repository root);
- `exact_command`: the whole command is the expert's;
- `nll_true`: mean negative log-likelihood per token of the expert's command, teacher-forced, after the real listing;
- `nll_swapped`: the same after another conversation's listing, one whose expert ran another program;
- `observation_gain`: `nll_swapped - nll_true`, in nats per token: what reading the listing is worth to the model.
  A model that reads it pays for a listing that points elsewhere; one that emits a memorised command does not.

And the copy diagnostic (issue 45's L0, `copy_diagnostic`): teacher-forced accuracy on the final answer's fact tokens
that the observations print, with the real observations and with another conversation's swapped in.

`benchmarks/learning_probe.py` runs it on model folders and writes `results/benchmarks/learning_probe.json`.
"""

from __future__ import annotations

import json
import re
import statistics
from pathlib import Path

from terminus.agent.template import CHAT_KWARGS
from terminus.determinism import deterministic_torch
from terminus.train.data import decision_cut

_CD = re.compile(r"^cd\s+(\S+)\s*&&\s*")
_COMMAND = re.compile(r'"command":\s*"((?:[^"\\]|\\.)*)"')


def program(command: str) -> str:
    """The program a command runs, after an optional `cd <root> &&`."""
    rest = _CD.sub("", command.strip(), count=1)
    return rest.split()[0] if rest.split() else ""


def root(command: str) -> str:
    m = _CD.match(command.strip())
    return m.group(1).rstrip("/") if m else "."


def _arguments(call: dict) -> dict:
    args = call["function"]["arguments"]
    return json.loads(args) if isinstance(args, str) else args


def cases(rows: list[dict], limit: int) -> list[dict]:
    """Up to `limit` conversations spread evenly over the split, each with its decision (`data.decision_cut`: the
    listing's index and the expert's next command) and a swap partner: the next conversation (cyclically) whose
    expert ran another program."""
    found = []
    for row in rows:
        messages = [{k: v for k, v in m.items() if v is not None} for m in row["messages"]]  # datasets fills None
        if cut := decision_cut(messages):
            command = _arguments(cut[-1]["tool_calls"][0])["command"]
            found.append({"messages": messages, "tools": row.get("tools"), "at": len(cut) - 2, "command": command})
    if limit and len(found) > limit:
        found = [found[i * len(found) // limit] for i in range(limit)]
    for i, case in enumerate(found):
        others = found[i + 1 :] + found[:i]
        partner = next((o for o in others if program(o["command"]) != program(case["command"])), None)
        case["swapped_listing"] = partner["messages"][partner["at"]]["content"] if partner else None
    return found


def command_tokens(tokenizer, messages: list[dict], at: int, command: str, tools) -> tuple[list[int], list[int]]:
    """The token ids of the conversation through the assistant turn after messages[at], and the positions of the
    tokens that spell `command` in that turn (as JSON-quoted in the tool call)."""
    prompt = tokenizer.apply_chat_template(
        messages[: at + 1], tools=tools, add_generation_prompt=True, tokenize=False, **CHAT_KWARGS
    )
    full = tokenizer.apply_chat_template(messages[: at + 2], tools=tools, tokenize=False)
    quoted = json.dumps(command)[1:-1]
    start = full.find(quoted, len(prompt))
    if not full.startswith(prompt) or start < 0:
        raise ValueError("the chat template does not render the expert's command after the prompt")
    end = start + len(quoted)
    enc = tokenizer(full, return_offsets_mapping=True)
    positions = [i for i, (s, _) in enumerate(enc["offset_mapping"]) if i > 0 and start <= s < end]
    return enc["input_ids"], positions


def _command_nll(model, tokenizer, messages: list[dict], at: int, command: str, tools) -> float:
    """Teacher-forced mean NLL per token of `command` in the assistant turn that follows messages[: at + 1]."""
    import torch

    ids, positions = command_tokens(tokenizer, messages, at, command, tools)
    with torch.no_grad():
        logits = model(input_ids=torch.tensor([ids])).logits[0]
    logprobs = torch.log_softmax(logits.float(), dim=-1)
    return -float(sum(logprobs[i - 1, ids[i]] for i in positions) / max(1, len(positions)))


def _greedy_command(model, tokenizer, messages: list[dict], at: int, tools, max_new_tokens: int) -> str:
    import torch

    prompt = tokenizer.apply_chat_template(
        messages[: at + 1], tools=tools, add_generation_prompt=True, tokenize=False, **CHAT_KWARGS
    )
    enc = tokenizer(prompt, return_tensors="pt")
    with torch.no_grad():
        out = model.generate(**enc, max_new_tokens=max_new_tokens, do_sample=False)
    text = tokenizer.decode(out[0][enc["input_ids"].shape[1] :], skip_special_tokens=True)
    m = _COMMAND.search(text)
    if not m:
        return ""
    try:
        return json.loads(f'"{m.group(1)}"')
    except json.JSONDecodeError:
        return m.group(1)


def probe_split(model, tokenizer, rows: list[dict], limit: int = 40, max_new_tokens: int = 96) -> dict:
    hits = {"program": [], "root": [], "exact": []}
    true_nll, swapped_nll = [], []
    for case in cases(rows, limit):
        messages, at, want, tools = case["messages"], case["at"], case["command"], case["tools"]
        got = _greedy_command(model, tokenizer, messages, at, tools, max_new_tokens)
        hits["program"].append(program(got) == program(want))
        hits["root"].append(root(got) == root(want))
        hits["exact"].append(got.strip() == want.strip())
        true_nll.append(_command_nll(model, tokenizer, messages, at, want, tools))
        if case["swapped_listing"] is not None:
            swapped = [dict(m) for m in messages]
            swapped[at]["content"] = case["swapped_listing"]
            swapped_nll.append(_command_nll(model, tokenizer, swapped, at, want, tools))

    def mean(values) -> float | None:
        return round(statistics.fmean(values), 4) if values else None

    result = {
        "n": len(true_nll),
        "program_accuracy": mean(hits["program"]),
        "root_accuracy": mean(hits["root"]),
        "exact_command": mean(hits["exact"]),
        "nll_true": mean(true_nll),
        "nll_swapped": mean(swapped_nll),
    }
    gain = None if result["nll_swapped"] is None else round(result["nll_swapped"] - result["nll_true"], 4)
    result["observation_gain"] = gain
    return result


# -- L0, the copy diagnostic (issue 45): does the answer's fact come from the observation? -----------------------
_FACT = re.compile(r"[\w./-]+\.\w+:\d+|\b[\w./-]+::[\w\[\]-]+|\btest_\w+|(?<![\w.])\d+(?![\w.])")


def copyable_facts(answer: str, observations: str) -> list[tuple[int, int]]:
    """(start, end) in `answer` of each fact (a `path:line`, a test id, a number) that the observations also print:
    the facts an answer can only state by copying them from what its commands printed."""
    spans = []
    for m in _FACT.finditer(answer):
        if m.group(0) in observations and not (m.group(0).isdigit() and len(m.group(0)) == 1 and m.group(0) in "01"):
            spans.append(m.span())  # 0 and 1 are everywhere: no evidence of copying
    return spans


def fact_kind(fact: str) -> str:
    """`location` (path:line), `test` (a test id or name) or `number`: what a copyable fact is."""
    if re.fullmatch(r"[\w./-]+\.\w+:\d+", fact):
        return "location"
    return "number" if fact.isdigit() else "test"


def _answer_positions(tokenizer, messages: list[dict], tools, with_kinds: bool = False):
    """The conversation's token ids and the positions of its final answer's copyable fact tokens (and, `with_kinds`,
    each position's `fact_kind`); None without."""
    answer = messages[-1].get("content") or ""
    observations = "\n".join(m.get("content") or "" for m in messages if m.get("role") == "tool")
    spans = copyable_facts(answer, observations)
    if not spans:
        return None
    prompt = tokenizer.apply_chat_template(
        messages[:-1], tools=tools, add_generation_prompt=True, tokenize=False, **CHAT_KWARGS
    )
    full = tokenizer.apply_chat_template(messages, tools=tools, tokenize=False)
    base = full.find(answer, len(prompt))
    if not full.startswith(prompt) or base < 0:
        return None
    enc = tokenizer(full, return_offsets_mapping=True)
    want = [(base + a, base + b) for a, b in spans]
    positions = [i for i, (s, _) in enumerate(enc["offset_mapping"]) if i > 0 and any(a <= s < b for a, b in want)]
    if not positions:
        return None
    if not with_kinds:
        return enc["input_ids"], positions
    kinds = []
    for i in positions:
        start = enc["offset_mapping"][i][0]
        a, b = next((a, b) for a, b in want if a <= start < b)
        kinds.append(fact_kind(full[a:b]))
    return enc["input_ids"], positions, kinds


def _accuracy(model, ids: list[int], positions: list[int]) -> list[float]:
    import torch

    with torch.no_grad():
        logits = model(input_ids=torch.tensor([ids])).logits[0]
    return [float(int(logits[i - 1].argmax()) == ids[i]) for i in positions]


def copy_diagnostic(model, tokenizer, rows: list[dict], limit: int = 40) -> dict:
    """Teacher-forced accuracy on the final answer's copyable fact tokens, with the conversation's real observations
    (`fact_token_acc_real`) and with another conversation's observations in their place (`fact_token_acc_swapped`).
    A model that copies from its observations loses accuracy when they are swapped; one that states memorised or
    guessed values does not. Conversations are those ending in a `<final_answer>` with a copyable fact."""
    usable = []
    for row in rows:
        messages, tools = row["messages"], row.get("tools")
        if (
            messages
            and messages[-1].get("role") == "assistant"
            and "<final_answer>" in (messages[-1].get("content") or "")
        ):
            usable.append((messages, tools))
    real, swapped, per_real, per_swapped = [], [], [], []
    by_kind: dict[str, dict[str, list[float]]] = {}
    for i, (messages, tools) in enumerate(usable[:limit]):
        kinded = _answer_positions(tokenizer, messages, tools, with_kinds=True)
        if kinded is None:
            continue
        found, kinds = kinded[:2], kinded[2]
        hits = _accuracy(model, *found)
        real += hits
        per_real.append(statistics.fmean(hits))
        for kind, hit in zip(kinds, hits, strict=True):
            by_kind.setdefault(kind, {"real": [], "swapped": []})["real"].append(hit)
        partner = usable[(i + 1) % len(usable)][0]
        outputs = [m.get("content") or "" for m in partner if m.get("role") == "tool"] or [""]
        k, other = 0, []
        for m in messages:
            if m.get("role") == "tool":
                m = dict(m) | {"content": outputs[k % len(outputs)]}
                k += 1
            other.append(m)
        swapped_found = _swapped_positions(tokenizer, other, tools, found)
        if swapped_found is not None:
            hits = _accuracy(model, *swapped_found)
            swapped += hits
            per_swapped.append(statistics.fmean(hits))
            for kind, hit in zip(kinds, hits, strict=True):
                by_kind[kind]["swapped"].append(hit)

    def mean(values) -> float | None:
        return round(statistics.fmean(values), 4) if values else None

    return {
        "fact_tokens": len(real),
        "fact_token_acc_real": mean(real),
        "fact_token_acc_swapped": mean(swapped),
        # each conversation's accuracy: its tokens are not independent, so intervals are over conversations
        "per_conversation": {"real": [round(a, 4) for a in per_real], "swapped": [round(a, 4) for a in per_swapped]},
        # by what the fact is: a model may copy numbers long before names or path:line
        "by_kind": {
            k: {"tokens": len(v["real"]), "real": mean(v["real"]), "swapped": mean(v["swapped"])}
            for k, v in sorted(by_kind.items())
        },
    }


def _swapped_positions(tokenizer, messages, tools, found) -> tuple[list[int], list[int]] | None:
    """The swapped conversation's ids and the positions of the same answer tokens (the answer is unchanged, so its
    tokens are the real conversation's last ones)."""
    ids_real, positions_real = found
    prompt = tokenizer.apply_chat_template(messages, tools=tools, tokenize=False)
    ids = tokenizer(prompt)["input_ids"]
    shift = len(ids) - len(ids_real)
    positions = [p + shift for p in positions_real]
    if not positions or min(positions) < 1 or any(ids[p] != ids_real[p - shift] for p in positions):
        return None
    return ids, positions


def probe(model_path: Path | str, data: Path | str, limit: int = 40, splits=("train", "validation")) -> dict:
    """The probe's figures for one model folder on an SFT dataset folder (`datasets.load_from_disk`)."""
    from datasets import load_from_disk
    from transformers import AutoModelForCausalLM, AutoTokenizer

    deterministic_torch(0)
    tokenizer = AutoTokenizer.from_pretrained(model_path)
    model = AutoModelForCausalLM.from_pretrained(model_path).eval()
    dataset = load_from_disk(str(data))
    out = {"parameters": sum(p.numel() for p in model.parameters())}
    for split in splits:
        if split in dataset:
            rows = list(dataset[split])
            out[split] = probe_split(model, tokenizer, rows, limit) | copy_diagnostic(model, tokenizer, rows, limit)
    return out
