"""Reading a model's reply: tool calls (OpenAI `tool_calls` or Qwen3's hermes tags) and the `<final_answer>`.

Nothing here raises on model output except `FormatError`, whose message goes back to the model.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

_TOOL_CALL = re.compile(r"<tool_call>\s*(.*?)\s*(?:</tool_call>|$)", re.S)
_FINAL = re.compile(r"<final_answer>(.*?)(?:</final_answer>|$)", re.S | re.I)
_THINK = re.compile(r"<think>.*?(?:</think>|$)", re.S)
_PAIR = re.compile(
    r"^\s*[-*]?\s*\**command\**\s*[:：]\s*\**\s*(?P<command>.*?)\s*$\n"
    r"(?P<summary>(?:(?!^\s*[-*]?\s*\**command\**\s*[:：]).*\n?)*)",
    re.M | re.I,
)
_SUMMARY_HEAD = re.compile(r"^\s*\**summary\**\s*[:：]\s*\**\s*", re.I)


class FormatError(ValueError):
    """The reply is neither a usable tool call nor a final answer."""


@dataclass
class ToolCall:
    name: str
    arguments: object
    id: str | None = None


def strip_thinking(text: str) -> str:
    return _THINK.sub("", text or "")


def parse_tool_calls(message: dict) -> list[ToolCall]:
    """Tool calls from an assistant message; raises FormatError on a call that cannot be decoded."""
    calls: list[ToolCall] = []
    for raw in message.get("tool_calls") or []:
        if not isinstance(raw, dict):
            raise FormatError("a tool call is not an object")
        fn = raw.get("function") if isinstance(raw.get("function"), dict) else raw
        name, args = fn.get("name"), fn.get("arguments", {})
        if isinstance(args, str):
            try:
                args = json.loads(args) if args.strip() else {}
            except json.JSONDecodeError as err:
                raise FormatError(f"the arguments of tool call {name!r} are not valid JSON ({err.msg})") from None
        if not isinstance(name, str):
            raise FormatError("a tool call has no function name")
        calls.append(ToolCall(name=name, arguments=args, id=raw.get("id")))
    if calls:
        return calls
    content = strip_thinking(message.get("content") or "")
    for body in _TOOL_CALL.findall(content):
        try:
            payload = json.loads(body)
        except json.JSONDecodeError as err:
            raise FormatError(f"the <tool_call> body is not valid JSON ({err.msg})") from None
        if not isinstance(payload, dict) or not isinstance(payload.get("name"), str):
            raise FormatError('a <tool_call> must hold {"name": ..., "arguments": {...}}')
        calls.append(ToolCall(name=payload["name"], arguments=payload.get("arguments", {})))
    return calls


def final_answer_text(text: str) -> str | None:
    match = _FINAL.search(strip_thinking(text or ""))
    return match.group(1).strip() if match else None


def parse_final_answer(text: str) -> list[dict[str, str]] | None:
    """`[{command, summary}, ...]` from a reply's `<final_answer>`, or None when there is none.

    Tolerates a missing closing tag, markdown bullets and bold, code fences, and text without pairs
    (returned as one entry with an empty command).

    >>> parse_final_answer("<final_answer>\\nCommand: make\\nSummary: ok, 0 errors\\n</final_answer>")
    [{'command': 'make', 'summary': 'ok, 0 errors'}]
    """
    body = final_answer_text(text)
    if body is None:
        return None
    body = body.replace("```", "") + "\n"
    entries = []
    for match in _PAIR.finditer(body):
        command = match.group("command").strip().strip("`").strip()
        summary = _SUMMARY_HEAD.sub("", match.group("summary").strip()).strip()
        entries.append({"command": command, "summary": summary})
    if not entries and body.strip():
        entries.append({"command": "", "summary": body.strip()})
    return entries


def render_final_answer(entries: list[dict[str, str]]) -> str:
    pairs = "\n".join(f"Command: {e['command']}\nSummary: {e['summary']}" for e in entries)
    return f"<final_answer>\n{pairs}\n</final_answer>"
