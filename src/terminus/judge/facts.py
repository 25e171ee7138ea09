"""The deterministic fact checker: the claims a final answer makes, checked against the task's ground truth
and against what the trajectory's commands actually printed. No judge can talk its way around it.

- grounded: a claim whose text (a count, a test id, `path:line`, a package, a build's outcome) appears in the output
  of the command its pair names (a pair naming no command rests on every command's output). Counts are seen only
  where the output states them; a build's outcome only in the exit status or output of a build that ran;
- fact recall: of the facts the task type requires, the share the answer states correctly *and* grounded: a fact
  known from the corpus but never printed earns nothing, and with no command run nothing is grounded;
- fact precision: of the claims that the ground truth can decide, the share that is right;
- hallucinated: claims that are not grounded (stated but never seen);
- unsupported: the share of the summaries' text that states nothing checkable and rests on nothing printed;
- unusable: an answer with tool-call markup, a raw tool-call object or an empty `Summary:` (the main agent cannot
  read it), or with no pair at all.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field

from terminus.judge.form import unsupported_share, unusable
from terminus.judge.runs import Run, is_build, is_runner, observations_of, runs_named, runs_of

__all__ = ["Claim", "FactCheck", "check", "extract_claims", "observations_of", "required_facts", "unusable"]

_SOURCE = r"[\w./@-]+\.(?:py|pyi|js|mjs|cjs|ts|c|cc|cpp|cxx|h|hpp|rs|go|java|kt|cs|rb)"
_LOCATION = re.compile(rf"(?<![\w/.-])({_SOURCE}):(\d+)")
_PASSED = re.compile(r"\b(\d+)\s+(?:tests?\s+|cases?\s+)?(?:passed|passing|pass(?:es)?|succeeded|ok)\b", re.I)
_FAILED = re.compile(r"\b(\d+)\s+(?:tests?\s+|cases?\s+)?(?:failed|failing|failures?|fail(?:s)?)\b", re.I)
_WARNINGS = re.compile(r"\b(\d+)\s+(?:compiler\s+)?warnings?\b|\bwarnings?:\s*(\d+)\b", re.I)
_BUILD_OK = re.compile(
    r"\bbuild (?:succeeded|succeeds|ok|passed|is clean)\b|\bcompiles? (?:fine|cleanly|successfully)\b", re.I
)
_BUILD_BAD = re.compile(
    r"\bbuild (?:failed|fails|is broken)\b|\bcompile error|\bcompilation (?:failed|error)|\bdoes not compile\b|"
    r"\bfailed to compile\b|\bSyntaxError\b",
    re.I,
)
_PACKAGE = re.compile(
    r"missing (?:dependency|package|module)[: ]+'?([@\w./-]+?)'?(?=[\s,;.)]|$)|"
    r"\b(?:pip3?|python3? -m pip|npm|yarn|pnpm|cargo|go) (?:install|add|get)\s+([@\w./-]+?)(?=[\s,;)`'\"]|\.?$)|"
    r"No module named '([\w.]+)'|Cannot find (?:module|package) '([^']+)'",
    re.I,
)
_LIST = re.compile(r"\bfailing(?: tests?)?:\s*(.+?)(?:;|\.\s|\.$|\n|$)", re.I)
_TEST_ID = re.compile(r"(?<![\w/.-])([\w./-]+\.\w+::[\w\[\]:.-]+|tests::\w+|Test[A-Z]\w+|test_\w+)")


@dataclass
class Claim:
    kind: str  # passed | failed | warnings | build | package | location | test (listed failing) | mention
    value: object
    text: str
    grounded: bool = False  # set by `check`: seen in the output of the command its pair names


@dataclass
class FactCheck:
    precision: float
    recall: float
    claims: int
    correct: int
    wrong: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    hallucinated: list[str] = field(default_factory=list)
    unsupported: float = 0.0
    unusable: str | None = None

    def to_dict(self) -> dict:
        return asdict(self)


def answer_text(final_answer: list[dict] | None) -> str:
    if not final_answer:
        return ""
    return "\n".join(f"{e.get('command', '')}\n{e.get('summary', '')}" for e in final_answer)


def extract_claims(text: str) -> list[Claim]:
    """Every checkable claim in an answer: counts, test ids, file:line, warnings, build outcome, packages."""
    claims: list[Claim] = []
    # Commands are quoted in the answer; their text (e.g. `cd build && make`) states nothing.
    summaries = "\n".join(line for line in text.splitlines() if not line.lstrip().lower().startswith("command:"))
    for m in _PASSED.finditer(summaries):
        claims.append(Claim("passed", int(m.group(1)), m.group(0)))
    for m in _FAILED.finditer(summaries):
        claims.append(Claim("failed", int(m.group(1)), m.group(0)))
    for m in _WARNINGS.finditer(summaries):
        claims.append(Claim("warnings", int(m.group(1) or m.group(2)), m.group(0)))
    if _BUILD_BAD.search(summaries):
        claims.append(Claim("build", False, _BUILD_BAD.search(summaries).group(0)))
    elif _BUILD_OK.search(summaries):
        claims.append(Claim("build", True, _BUILD_OK.search(summaries).group(0)))
    seen_packages = set()
    for m in _PACKAGE.finditer(summaries):
        name = next(g for g in m.groups() if g)
        name = name.strip("'\"`").rstrip(".")
        if name.lower() not in seen_packages:
            seen_packages.add(name.lower())
            claims.append(Claim("package", name, m.group(0)))
    seen_locations = set()
    for m in _LOCATION.finditer(summaries):
        loc = f"{_strip(m.group(1))}:{m.group(2)}"
        if loc not in seen_locations:
            seen_locations.add(loc)
            claims.append(Claim("location", loc, m.group(0)))
    # Names in a "failing: a, b" list claim a failure; other test ids are mentions (checked for grounding only).
    names: list[tuple[str, str]] = []
    for m in _LIST.finditer(summaries):
        listed = re.split(r",\s*", re.sub(r"\(\+\d+ more\)", "", m.group(1)))
        names += [("test", n.strip().strip("`'\"")) for n in listed]
    names += [("mention", m.group(1)) for m in _TEST_ID.finditer(summaries)]
    seen_tests = set()
    for kind, name in names:
        key = _test_key(name)
        if name and key not in seen_tests and not _LOCATION.fullmatch(name):
            seen_tests.add(key)
            claims.append(Claim(kind, name, name))
    return claims


def _strip(path: str) -> str:
    return path[2:] if path.startswith("./") else path


def _test_key(name: str) -> str:
    """A test id compared by its last component: `tests/test_x.py::test_a` ~ `test_a`, `tests::a` ~ `a`."""
    return re.split(r"::|\s+>\s+", name.strip())[-1].strip()


def _same_location(claim: str, fact: str) -> bool:
    claim, fact = _strip(claim), _strip(fact)
    return claim == fact or fact.endswith("/" + claim) or claim.endswith("/" + fact)


def _fact_locations(facts: dict) -> list[str]:
    error = facts.get("error") or {}
    build = facts.get("build") or {}
    locations = list(error.get("locations") or [])
    if error.get("root_cause"):
        locations.append(error["root_cause"])
    locations += [e["location"] for e in build.get("errors") or [] if e.get("location")]
    return locations


def judge_claim(claim: Claim, facts: dict) -> bool | None:
    """True/False when the ground truth decides the claim, None when it cannot."""
    tests, build, dep = facts.get("tests"), facts.get("build"), facts.get("dependency")
    if claim.kind in ("passed", "failed"):
        return None if tests is None else tests[claim.kind] == claim.value
    if claim.kind == "warnings":
        return None if not build or not build.get("success") else build.get("warnings", 0) == claim.value
    if claim.kind == "build":
        return None if build is None else build["success"] == claim.value
    if claim.kind == "package":
        if dep is None:
            return False  # no dependency is missing: naming one is wrong
        return _norm_pkg(claim.value) == _norm_pkg(dep["package"])
    if claim.kind == "location":
        locations = _fact_locations(facts)
        if not locations:
            return None
        return any(_same_location(claim.value, loc) for loc in locations) or None
    if claim.kind == "test":  # listed as failing
        if tests is None:
            return None
        return any(_test_key(claim.value) == _test_key(f) for f in tests["failing"])
    return None  # a mention: the ground truth cannot tell in what sense the test was named


def _norm_pkg(name: str) -> str:
    return name.lower().replace("_", "-").split("[")[0]


def required_facts(task_type: str, facts: dict) -> list[tuple[str, object]]:
    """What a complete answer must state for a task of this type."""
    required: list[tuple[str, object]] = []
    tests, build, error, dep = facts.get("tests"), facts.get("build"), facts.get("error"), facts.get("dependency")
    if task_type == "test-execution" and tests:
        required.append(("passed", tests["passed"]))
        if tests["failed"]:  # "9 passed" says nothing failed; runners print no "0 failed"
            required.append(("failed", tests["failed"]))
        required += [("test", name) for name in tests["failing"][:10]]
    elif task_type == "error-diagnosis":
        if error:
            required.append(("location", tuple(_fact_locations(facts))))
        if tests and tests["failing"]:
            required.append(("test", tuple(tests["failing"])))
    elif task_type == "build/compile" and build:
        required.append(("build", build["success"]))
        if build["success"]:
            required.append(("warnings", build.get("warnings", 0)))
        elif error:
            required.append(("location", tuple(_fact_locations(facts))))
    elif task_type == "dependency" and dep:
        required.append(("package", dep["package"]))
    return required


def _satisfied(kind: str, value: object, claims: list[Claim]) -> bool:
    """Whether a grounded claim states the required fact."""
    for claim in claims:
        if not claim.grounded or (claim.kind != kind and not (kind == "test" and claim.kind == "mention")):
            continue
        if kind == "location":
            if any(_same_location(claim.value, loc) for loc in value):
                return True
        elif kind == "test":
            options = value if isinstance(value, tuple) else (value,)
            if any(_test_key(claim.value) == _test_key(o) for o in options):
                return True
        elif kind == "package":
            if _norm_pkg(claim.value) == _norm_pkg(value):
                return True
        elif claim.value == value:
            return True
    return False


# -- what the output states -----------------------------------------------------------------------------------------
_KEYWORD = {"passed": r"pass|ok\b|succe", "failed": r"fail|error", "warnings": r"warning"}
_KEYWORD_AFTER = {"passed": r"pass|succe", "failed": r"fail", "warnings": r"warning"}  # "ok 5 -" numbers a test
_UNIT = r"(?:(?:tests?|cases?|specs?|examples?|checks?|compiler|build)\s+)?"
# One line per test or per warning, as go -v, cargo, TAP, pytest -v, ctest and compilers print them.
_MARKERS = {
    "passed": r"^(?:--- PASS|test .* \.\.\. ok$|\s*ok \d+ - |\S+ PASSED|\s*\d+/\d+ Test\s+#\d+: .*\bPassed\b)",
    "failed": (
        r"^(?:--- FAIL|test .* \.\.\. FAILED$|\s*not ok \d+ - |FAILED \S+|\s*\d+/\d+ Test\s+#\d+: .*\*\*\*Failed)"
    ),
    "warnings": r"^(?:warning: (?!.*generated \d+ warning)|\S+:\d+:\d+: warning:)",
}
_PER_SUITE = {"passed": r"(\d+) passed", "failed": r"(\d+) failed", "warnings": r"(\d+) warnings?"}
_CTEST = re.compile(r"\b\d+% tests passed, (\d+) tests? failed out of (\d+)")
_COMPILE_ERROR = re.compile(
    r"\bSyntaxError\b|^error(?:\[E\d+\])?: (?!test failed|\d+ targets? failed)|: (?:fatal )?error\b|\berror TS\d+|"
    r"\bcompilation (?:failed|terminated)|\bBUILD FAILED\b",
    re.M,
)


def _count_seen(kind: str, number: int, run: Run) -> bool:
    """Whether one command's output states the count: beside its word ("2 failed", "warnings: 4", "# fail 1"), as
    one line per test or warning, as the sum of several suites' result lines, or in ctest's summary line. A count of
    0 read from the absence of such lines needs a build or test run that completed (an `ls` prints no warnings)."""
    text = run.output
    beside = (
        rf"(?<![\d.:]){number}\s+{_UNIT}(?:{_KEYWORD[kind]})|"
        rf"(?<![\w-])(?:{_KEYWORD_AFTER[kind]})\w*(?::\s*|=\s*|\s+){number}(?![\d.:%])"
    )
    if re.search(beside, text, re.I):
        return True
    for failed, total in _CTEST.findall(text):
        if kind in ("passed", "failed") and number == (int(total) - int(failed) if kind == "passed" else int(failed)):
            return True
    if number == 0 and not is_runner(run):
        return False
    if len(re.findall(_MARKERS[kind], text, re.M)) == number:
        return True
    suites = re.findall(_PER_SUITE[kind], text)
    return len(suites) > 1 and sum(int(v) for v in suites) == number


def _build_seen(success: bool, run: Run) -> bool:
    """A build's outcome, in the exit status or output of a build that ran; a failure also in a compile error that
    any run printed (pytest's collection error names the SyntaxError)."""
    broken = bool(_COMPILE_ERROR.search(run.output))
    if success:
        return is_build(run) and run.exit_code == 0 and not broken
    return broken or (is_build(run) and run.exit_code not in (0, None))


def grounded(claim: Claim, runs: tuple[Run, ...]) -> bool:
    """Whether what the claim states appears in the output of one of `runs` (the runs its pair names)."""
    if claim.kind == "build":
        return any(_build_seen(bool(claim.value), run) for run in runs)
    if claim.kind in ("passed", "failed", "warnings"):
        return any(_count_seen(claim.kind, int(claim.value), run) for run in runs)
    text = "\n".join(run.output for run in runs)
    if not text:
        return False
    if claim.kind == "location":
        path, line = claim.value.rsplit(":", 1)
        base = path.rsplit("/", 1)[-1]
        return bool(re.search(rf"{re.escape(base)}(?::|\", line |\(|, line )\s*{line}\b", text))
    return _test_key(str(claim.value)).lower() in text.lower()  # test, mention, package


def _key(claim: Claim) -> tuple[str, str] | None:
    """Claims stated in several pairs count once (test ids, locations, packages); counts and outcomes each time."""
    if claim.kind in ("test", "mention"):
        return ("test", _test_key(str(claim.value)))
    if claim.kind == "location":
        return ("location", str(claim.value))
    if claim.kind == "package":
        return ("package", _norm_pkg(str(claim.value)))
    return None


def check(final_answer: list[dict] | None, facts: dict, task_type: str, observations: str = "") -> FactCheck:
    """`observations`: what `observations_of` gives (the runs apart), or one text (then its command is not known)."""
    runs = runs_of(observations)
    claims: list[Claim] = []
    by_key: dict[tuple[str, str], Claim] = {}
    entries = []
    for entry in final_answer or []:
        named = runs_named(entry.get("command") or "", runs)
        stated = extract_claims(entry.get("summary") or "")
        for claim in stated:
            claim.grounded = grounded(claim, named)
            key = _key(claim)
            if key is None:
                claims.append(claim)
            elif key not in by_key:
                by_key[key] = claim
                claims.append(claim)
            elif claim.grounded and not by_key[key].grounded:  # seen where another pair names it: that one counts
                claims[claims.index(by_key[key])] = by_key[key] = claim
        entries.append((entry.get("summary") or "", stated, named))
    verdicts = [(c, judge_claim(c, facts)) for c in claims]
    decided = [(c, v) for c, v in verdicts if v is not None]
    correct = sum(1 for _, v in decided if v)
    wrong = [c.text for c, v in decided if not v]
    required = required_facts(task_type, facts)
    missing = [f"{kind}={value}" for kind, value in required if not _satisfied(kind, value, claims)]
    reason = unusable(final_answer)
    answered = bool(final_answer) and reason is None
    if not answered:
        recall = 0.0
    elif required:
        recall = (len(required) - len(missing)) / len(required)
    else:  # nothing to find: an answer on commands that ran is complete
        recall = 1.0 if runs else 0.0
    # An answer that states nothing the ground truth can check earns no precision: otherwise an empty
    # <final_answer> would be a cheap reward (GRPO found that within two steps).
    precision = correct / len(decided) if decided else (1.0 if answered and runs and not required else 0.0)
    hallucinated = [c.text for c in claims if not c.grounded]
    unsupported = round(unsupported_share(entries), 4)
    return FactCheck(precision, recall, len(claims), correct, wrong, missing, hallucinated, unsupported, reason)


def fact_path(final_answer: list[dict] | None, facts: dict, task_type: str, observations: str = "",
              checked: FactCheck | None = None) -> dict:  # fmt: skip
    """Where an episode's facts were lost (issue 45): each required fact, whether some command's output printed it
    (a claim of the true value would be grounded in one of the runs) and whether the answer stated it (the fact
    checker's recall). `printed` 0 means no command that shows the facts ran; stated-of-printed is what the answer
    carried over from what it saw. {required, printed, stated, stated_and_printed}: counts. `checked`: the
    episode's `check` where the caller has it already (it is not run again)."""
    runs = runs_of(observations)
    checked = checked or check(final_answer, facts, task_type, observations)
    answered = bool(final_answer) and checked.unusable is None  # as `check`: an unusable answer states nothing
    missing = set(checked.missing)
    out = {"required": 0, "printed": 0, "stated": 0, "stated_and_printed": 0}
    for kind, value in required_facts(task_type, facts):
        options = value if isinstance(value, tuple) else (value,)
        seen = any(grounded(Claim(kind, option, str(option)), runs) for option in options)
        stated = answered and f"{kind}={value}" not in missing
        out["required"] += 1
        out["printed"] += seen
        out["stated"] += stated
        out["stated_and_printed"] += seen and stated
    return out
