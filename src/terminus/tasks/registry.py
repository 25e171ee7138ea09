"""Real projects from the package registry: Python sdists that ship their tests, with one operator flipped
inside one function. Ground truth comes from pytest's junit XML, never from its summary line.

Per package: download (cached) -> unpack -> baseline run twice in the sandbox (tests that fail in either run
are quarantined through a root conftest, then a third run must be green) -> candidate mutation sites in the
package's own functions, in a seeded order -> each mutant runs under a timeout; a mutant whose runner wrote no
junit file crashed it, one that timed out hangs, one that breaks no test is equivalent: all are dropped and
counted. The rest are tasks with their failing test ids, counts, failure locations and the mutated line.
"""

from __future__ import annotations

import ast
import logging
import random
import re
import shutil
import subprocess
import sys
import tarfile
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path

from terminus.sandbox import SandboxSpec, hostfs, make_sandbox

log = logging.getLogger(__name__)

JUNIT = ".terminus-junit.xml"
PYTEST = f"python3 -m pytest -q -p no:cacheprovider -o junit_family=xunit1 --junitxml={JUNIT}"
FLIPS = {
    ast.Add: "-",
    ast.Sub: "+",
    ast.Mult: "+",
    ast.Lt: "<=",
    ast.LtE: "<",
    ast.Gt: ">=",
    ast.GtE: ">",
    ast.Eq: "!=",
    ast.NotEq: "==",
}
TOKENS = {
    ast.Add: "+",
    ast.Sub: "-",
    ast.Mult: "*",
    ast.Lt: "<",
    ast.LtE: "<=",
    ast.Gt: ">",
    ast.GtE: ">=",
    ast.Eq: "==",
    ast.NotEq: "!=",
}
QUARANTINE = """

# --- added by terminus: tests that fail before any change are quarantined, so every failure is the fault's
_TERMINUS_QUARANTINE = {quarantined!r}


def pytest_collection_modifyitems(config, items):
    items[:] = [item for item in items if item.nodeid not in _TERMINUS_QUARANTINE]
"""


class RegistryUnavailable(RuntimeError):
    """The registry cannot be reached (or the package does not exist there): skip the source, say why."""


class JunitError(ValueError):
    """The suite's junit report cannot be read (not XML, too large): the package gives no tasks, and says why."""


# A junit report of a suite of thousands of tests is a few MB; one larger than this is not read.
JUNIT_MAX_BYTES = 64 * 1024 * 1024


@dataclass
class Outcome:
    passed: int
    failed: int
    skipped: int
    failing: list[str]
    failures: dict[str, str]  # test id -> failure text
    crashed: bool = False
    timed_out: bool = False


@dataclass
class Mutant:
    file: str
    line: int
    original: str
    replacement: str
    facts: dict = field(default_factory=dict)
    fix: dict = field(default_factory=dict)  # the edit that undoes the mutation (the repair benchmark's gold)


def download(name: str, version: str, cache: Path) -> Path:
    """The sdist of name==version, from the cache or the registry."""
    cache.mkdir(parents=True, exist_ok=True)
    wanted = f"{name}-{version}.tar.gz".lower().replace("_", "-")

    def cached() -> Path | None:
        return next((p for p in cache.glob("*.tar.gz") if p.name.lower().replace("_", "-") == wanted), None)

    if found := cached():
        return found
    command = [
        sys.executable,
        "-m",
        "pip",
        "download",
        "--no-binary",
        ":all:",
        "--no-deps",
        "-q",
        "-d",
        str(cache),
        f"{name}=={version}",
    ]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=180)
    except subprocess.TimeoutExpired:
        raise RegistryUnavailable(f"pip download {name}=={version} timed out (is PyPI reachable?)") from None
    if done.returncode != 0:
        tail = (done.stderr or done.stdout).strip().splitlines()[-1:] or ["no output"]
        raise RegistryUnavailable(f"pip download {name}=={version} failed: {tail[0]}")
    if found := cached():
        return found
    raise RegistryUnavailable(f"pip download {name}=={version} gave no sdist (a wheel-only release?)")


def unpack(sdist: Path, into: Path) -> Path:
    into.mkdir(parents=True, exist_ok=True)
    with tarfile.open(sdist) as tar:
        tar.extractall(into, filter="data")
    (root,) = [p for p in into.iterdir() if p.is_dir()]
    return root


def run_tests(root: Path, timeout_s: float, sandbox: SandboxSpec) -> Outcome:
    """Run the suite in a sandbox over a copy of root and read junit (the ground truth, not the summary)."""
    with make_sandbox(sandbox, root) as box:
        result = box.run(PYTEST, timeout_s)
        if result.timed_out:
            return Outcome(0, 0, 0, [], {}, timed_out=True)
        # The suite wrote the report in the workspace: read it without following a link it may have planted.
        if not hostfs.is_file(Path(box.workspace), JUNIT):
            return Outcome(0, 0, 0, [], {}, crashed=True)
        data = hostfs.read_bytes(Path(box.workspace), JUNIT, limit=JUNIT_MAX_BYTES + 1)
        if len(data) > JUNIT_MAX_BYTES:
            raise JunitError(f"the suite's junit report {JUNIT} is over {JUNIT_MAX_BYTES} bytes")
        return parse_junit(data)


def parse_junit(text: str | bytes) -> Outcome:
    """The counts of a junit report (bytes: its XML declaration names the encoding); JunitError when it is not
    well-formed XML, which the suite's own code can make it."""
    try:
        root = ET.fromstring(text)
    except ET.ParseError as err:
        raise JunitError(f"the suite's junit report {JUNIT} is not well-formed XML ({err})") from None
    passed = failed = skipped = 0
    failing, failures = [], {}
    for case in root.iter("testcase"):
        tid = test_id(case)
        problem = case.find("failure")
        if problem is None:
            problem = case.find("error")
        if problem is not None:
            failed += 1
            failing.append(tid)
            failures[tid] = (problem.get("message") or "") + "\n" + (problem.text or "")
        elif case.find("skipped") is not None:
            skipped += 1
        else:
            passed += 1
    return Outcome(passed, failed, skipped, failing, failures)


def test_id(case: ET.Element) -> str:
    """pytest's node id from an xunit1 testcase: file::[Class::]name."""
    file, classname, name = case.get("file") or "", case.get("classname") or "", case.get("name") or ""
    module = file[:-3].replace("/", ".") if file.endswith(".py") else ""
    cls = classname[len(module) + 1 :] if module and classname.startswith(module + ".") else ""
    return "::".join(p for p in (file or classname, cls, name) if p)


def mutation_sites(root: Path, package_dirs: list[Path]) -> list[tuple[str, int, int, int, str, str]]:
    """(file, line, col_start, col_end, old token, new token) of every flippable operator inside a function."""
    sites = []
    for folder in package_dirs:
        for path in sorted(folder.rglob("*.py")):
            rel = path.relative_to(root).as_posix()
            if any(part.startswith("test") or part in ("conftest.py", "setup.py", "docs") for part in rel.split("/")):
                continue
            try:
                source = path.read_text()
                tree = ast.parse(source)
            except (SyntaxError, UnicodeDecodeError, ValueError):
                continue
            lines = source.splitlines()
            for func in ast.walk(tree):
                if not isinstance(func, ast.FunctionDef | ast.AsyncFunctionDef):
                    continue
                for node in ast.walk(func):
                    pairs = []
                    if isinstance(node, ast.BinOp) and type(node.op) in FLIPS:
                        pairs.append((node.left, node.op, node.right))
                    elif isinstance(node, ast.Compare) and len(node.ops) == 1 and type(node.ops[0]) in FLIPS:
                        pairs.append((node.left, node.ops[0], node.comparators[0]))
                    for left, op, right in pairs:
                        if left.end_lineno != right.lineno:
                            continue
                        raw = lines[right.lineno - 1].encode()
                        gap = raw[left.end_col_offset : right.col_offset].decode(errors="replace")
                        token = TOKENS[type(op)]
                        at = gap.find(token)
                        if at < 0 or gap.count(token) != 1 or (token in "<>" and gap[at : at + 2] in ("<=", ">=")):
                            continue
                        start = len(raw[: left.end_col_offset].decode(errors="replace")) + at
                        sites.append((rel, right.lineno, start, start + len(token), token, FLIPS[type(op)]))
    return sorted(set(sites))


def apply(root: Path, site: tuple[str, int, int, int, str, str]) -> None:
    rel, line, start, end, old, new = site
    path = root / rel
    lines = path.read_text().splitlines(keepends=True)
    text = lines[line - 1]
    if text[start:end] != old:
        raise ValueError(f"{rel}:{line}: expected {old!r} at column {start}")
    lines[line - 1] = text[:start] + new + text[end:]
    path.write_text("".join(lines))


def package_dirs(root: Path, name: str) -> list[Path]:
    """The package's own source: src/<pkg>, <pkg>/ or a top-level module."""
    wanted = {name.lower().replace("-", "_"), name.lower().replace("-", "")}
    found = []
    for base in (root / "src", root):
        if not base.is_dir():
            continue
        for child in base.iterdir():
            if (child.is_dir() and child.name.lower() in wanted) or (
                child.suffix == ".py" and child.stem.lower() in wanted
            ):
                found.append(child)
    # a single module file: mutate it alone
    return [p if p.is_dir() else p.parent for p in found][:1] if found else []


def failure_locations(failures: dict[str, str]) -> list[str]:
    """file:line where each failure's traceback ends (pytest's `path:line: ErrorType`), in order, distinct."""

    seen: list[str] = []
    for text in failures.values():
        hits = re.findall(r"^([\w./-]+\.py):(\d+): \w+", text, re.M)
        if hits:
            loc = f"{hits[-1][0]}:{hits[-1][1]}"
            if loc not in seen:
                seen.append(loc)
    return seen[:10]


def error_type(failures: dict[str, str]) -> str:
    first = next(iter(failures.values()), "")
    head = first.split("\n", 1)[0]
    return head.split(":", 1)[0].strip() or "AssertionError"


@dataclass
class PackageReport:
    name: str
    version: str
    status: str  # ok | unavailable | no-baseline | no-sites | bad-junit
    reason: str = ""
    baseline_quarantined: int = 0
    mutants: list[Mutant] = field(default_factory=list)
    dropped: dict[str, int] = field(default_factory=lambda: {"crash": 0, "hang": 0, "equivalent": 0})
    workdir: Path | None = None


def mutants_for(
    name: str,
    version: str,
    *,
    cache: Path,
    workdir: Path,
    count: int,
    seed: int,
    sandbox: SandboxSpec,
    max_tries: int = 12,
    timeout_s: float = 180.0,
) -> PackageReport:
    """Up to `count` mutants of one package with junit ground truth; `workdir/base` holds the clean tree. A junit
    report that cannot be read fails the package (status `bad-junit`, the reason said), never the build."""
    report = PackageReport(name, version, "ok", workdir=workdir)
    try:
        return _mutants(report, cache, workdir, count, seed, sandbox, max_tries, timeout_s)
    except JunitError as err:
        report.status, report.reason, report.mutants = "bad-junit", str(err), []
        return report


def _mutants(report: PackageReport, cache: Path, workdir: Path, count: int, seed: int, sandbox: SandboxSpec,
             max_tries: int, timeout_s: float) -> PackageReport:  # fmt: skip
    """`mutants_for` of the package `report` names, filling the report."""
    name, version = report.name, report.version
    try:
        sdist = download(name, version, cache)
    except RegistryUnavailable as err:
        report.status, report.reason = "unavailable", str(err)
        return report
    if workdir.exists():
        shutil.rmtree(workdir)
    root = unpack(sdist, workdir / "unpacked")
    first, second = run_tests(root, timeout_s, sandbox), run_tests(root, timeout_s, sandbox)
    if first.crashed or first.timed_out or first.passed == 0:
        report.status, report.reason = "no-baseline", "the test suite does not run here before any change"
        return report
    flaky_or_failing = sorted(set(first.failing) | set(second.failing))
    if flaky_or_failing:
        conftest = root / "conftest.py"
        previous = conftest.read_text() if conftest.exists() else ""
        conftest.write_text(previous + QUARANTINE.format(quarantined=flaky_or_failing))
        report.baseline_quarantined = len(flaky_or_failing)
    baseline = run_tests(root, timeout_s, sandbox)
    if baseline.failed or baseline.passed == 0:
        report.status, report.reason = "no-baseline", f"{baseline.failed} tests still fail after quarantine"
        return report
    sites = mutation_sites(root, package_dirs(root, name))
    if not sites:
        report.status, report.reason = "no-sites", "no flippable operator found in the package's functions"
        return report
    random.Random(f"{seed}/{name}/{version}").shuffle(sites)
    for site in sites[:max_tries]:
        if len(report.mutants) >= count:
            break
        tree = workdir / "candidate"
        shutil.rmtree(tree, ignore_errors=True)
        shutil.copytree(root, tree, symlinks=True)
        apply(tree, site)
        outcome = run_tests(tree, max(30.0, timeout_s / 3), sandbox)
        collection = any(text.startswith("collection failure") for text in outcome.failures.values())
        reason = "crash" if outcome.crashed or collection else "hang" if outcome.timed_out else None
        if reason is None and not outcome.failing:
            reason = "equivalent"
        if reason:
            report.dropped[reason] += 1
            shutil.rmtree(tree)
            continue
        rel, line, _, _, old, new = site
        mutant = Mutant(rel, line, old, new)
        original_line = (root / rel).read_text().splitlines()[line - 1]
        mutated_line = (tree / rel).read_text().splitlines()[line - 1]
        mutant.fix = {"file": rel, "line": line, "old": mutated_line, "new": original_line}
        mutant.facts = {
            "project_root": ".",
            "tests": {
                "passed": outcome.passed,
                "failed": outcome.failed,
                "skipped": outcome.skipped,
                "failing": outcome.failing,
            },
            "exit_code": 1,
            "error": {
                "type": error_type(outcome.failures),
                "locations": failure_locations(outcome.failures),
                "root_cause": f"{rel}:{line}",
            },
        }
        report.mutants.append(mutant)
        tree.rename(workdir / f"mutant-{len(report.mutants) - 1}")
    return report
