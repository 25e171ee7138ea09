"""Facts from a Node project's own test script (`npm test`): whatever runner `package.json` starts (tape and
node:test print TAP, uvu, jest, vitest, mocha), read by the counts, failing tests, expected/actual values and first
location each prints. `toolchains.RUNNERS` sends `npm/yarn/pnpm test` output here."""

from __future__ import annotations

import re


def _first(pattern: str, text: str, flags: int = re.M) -> re.Match | None:
    return re.search(pattern, text, flags)


def node_test(command: str, text: str, code: int | None) -> list[str]:
    facts = []
    passed, failed = _first(r"^# pass (\d+)", text), _first(r"^# fail (\d+)", text)
    if passed and failed:
        facts.append(f"node:test: {passed.group(1)} passed, {failed.group(1)} failed")
    names = re.findall(r"^\s*not ok \d+ - (.+)$", text, re.M)
    names = [n for n in names if not n.endswith(".js") and not n.endswith(".mjs")]
    if names:
        facts.append("failing: " + ", ".join(names[:10]))
    loc = _first(r"\(([\w./-]+\.m?js):(\d+):\d+\)", text)
    if loc and names:
        facts.append(f"first failure at {loc.group(1)}:{loc.group(2)}")
    syntax = _first(r"^(?:# )?([\w./-]+\.m?js):(\d+)\n[\s\S]{0,600}?^(?:# )?SyntaxError: (.+)$", text)
    if syntax:
        path, line, message = syntax.groups()
        facts.append(f"the code does not load: SyntaxError at {path}:{line} ({message[:160]})")
    return facts


_TAP_NOT_OK = re.compile(r"^\s*not ok \d+ - (.+?)(?: # .*)?$", re.M)
_JEST_FAIL = re.compile(r"^\s*● (.+? › .+|[^\n]+?)$", re.M)
_MOCHA_FAIL = re.compile(r"^\s+\d+\) (.+?):?\n(?:\s+(\S.*?):\n)?", re.M)
_SPEC_FAIL = re.compile(r"^\s*[✖✘✕×] (.+)$", re.M)  # tap-spec, jest's list
_UVU_FAIL = re.compile(r'^\s*FAIL\s+(?:[\w./-]+\s+)?"(.+?)"$', re.M)
_LOCATION = re.compile(r"\(?((?![\w/.-]*node_modules)[\w./-]+\.[cm]?[jt]s):(\d+):\d+\)?")


def _counts(text: str) -> str | None:
    """The runner's own totals, in its words."""
    tap_pass, tap_fail = re.search(r"^# pass\s+(\d+)", text, re.M), re.search(r"^# fail\s+(\d+)", text, re.M)
    if tap_pass or tap_fail:
        return f"{tap_pass.group(1) if tap_pass else 0} passed, {tap_fail.group(1) if tap_fail else 0} failed"
    tap_spec = re.search(r"^\s*passing:\s+(\d+)\n\s*failing:\s+(\d+)", text, re.M)  # tap-spec's totals
    if tap_spec:
        return f"{tap_spec.group(1)} passed, {tap_spec.group(2)} failed"
    if jest := re.search(r"^Tests:\s+(.+? total)", text, re.M):
        return jest.group(1)
    if vitest := re.search(r"^\s*Tests\s+(.+?\(\d+\))", text, re.M):
        return vitest.group(1)
    passing, failing = re.search(r"^\s+(\d+) passing", text, re.M), re.search(r"^\s+(\d+) failing", text, re.M)
    if passing or failing:
        return f"{passing.group(1) if passing else 0} passed, {failing.group(1) if failing else 0} failed"
    total, passed = re.search(r"^\s*Total:\s+(\d+)", text, re.M), re.search(r"^\s*Passed:\s+(\d+)", text, re.M)
    if total and passed:
        return f"{passed.group(1)} passed, {int(total.group(1)) - int(passed.group(1))} failed"
    return None


def _values(text: str) -> str | None:
    """Expected against actual, as the runner prints them (TAP's YAML, jest's Expected/Received, uvu's ++/--)."""
    for expected, actual in (
        (r"^\s+expected: [|]-?\n\s+(.+)$", r"^\s+actual: [|]-?\n\s+(.+)$"),  # TAP's YAML block
        (r"^\s+expected: (.+)$", r"^\s+actual: (.+)$"),
        (r"^\s+Expected:? (.+)$", r"^\s+Received:? (.+)$"),
        (r"^\s*\+\+(.+)$", r"^\s*--(.+)$"),  # uvu
        (r"expected - actual\n\s*\n\s*-.*\n\s*\+(.+)$", r"expected - actual\n\s*\n\s*-(.+)$"),  # mocha's diff
    ):
        want, got = re.search(expected, text, re.M), re.search(actual, text, re.M)
        if want and got:
            return f"expected {want.group(1).strip()[:80]}, actual {got.group(1).strip()[:80]}"
    return None


def js_test(command: str, text: str, code: int | None) -> list[str]:
    words = re.sub(r"^cd \S+ && ", "", command).split()
    runner = words[0] if words else "npm"
    if re.search(r"^# pass \d+", text, re.M):  # TAP (node:test, tape): node:test's reader states its syntax errors too
        facts = [re.sub(r"^node:test:", f"{runner} test:", fact) for fact in node_test(command, text, code)]
        if len(facts) > 1 and (values := _values(text)):
            facts.insert(2, values)
        return facts or [f"{runner} test " + ("passed" if code == 0 else "failed")]
    facts = []
    counts = _counts(text)
    facts.append(
        f"{runner} test: {counts}" if counts else ("test script passed" if code == 0 else "test script failed")
    )
    names = _TAP_NOT_OK.findall(text) or _JEST_FAIL.findall(text) or _UVU_FAIL.findall(text)
    if not names and re.search(r"^\s+\d+ failing", text, re.M):  # mocha: `1) suite` then the test's title
        names = [" › ".join(filter(None, m)) for m in _MOCHA_FAIL.findall(text.split(" failing", 1)[1])]
    names = names or [re.sub(r" \(\d+ ?m?s\)$", "", n) for n in _SPEC_FAIL.findall(text)]
    names = list(dict.fromkeys(n.strip() for n in names if not re.search(r"\.[cm]?[jt]s$", n.strip())))
    if names:
        facts.append("failing: " + ", ".join(names[:10]) + (f" (+{len(names) - 10} more)" if len(names) > 10 else ""))
    if names and (values := _values(text)):
        facts.append(values)
    if names and (where := _LOCATION.search(text)):
        facts.append(f"first failure at {where.group(1)}:{where.group(2)}")
    return facts
