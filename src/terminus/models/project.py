"""What a project declares about how it is tested, read the way a developer reads it before running anything.

The expert used to run each toolchain's generic command (`node --test`, `python3 -m pytest` at the root), which is
wrong on real projects: a Node project's tests are whatever `package.json`'s `test` script says (uvu, tape, jest),
run by the package manager its lockfile names, and a Python `src/` layout is importable only with `PYTHONPATH=src`
(installing the project from an index would test PyPI's copy, not the checkout).

>>> read_package_json('{"scripts": {"test": "uvu -r esm test"}}')
'uvu -r esm test'
>>> read_package_json('{"name": "x", "scripts": {"test": "jest --ci"}, "dependencies": {"a": "1", ...')
'jest --ci'
>>> package_manager(["./package.json", "./yarn.lock"], ".")
'yarn'
>>> src_packages(["./pyproject.toml", "./src/platformdirs/__init__.py", "./src/platformdirs/api.py"], ".")
['platformdirs']
>>> src_packages(["./setup.cfg", "./src/calc.py", "./tests/test_calc.py"], ".")  # a module, not a package: no
[]
>>> node_filter("jest --coverage", "adds numbers")
"-t 'adds numbers'"
"""

from __future__ import annotations

import json
import re
import shlex
from pathlib import PurePosixPath

from terminus.models.toolchains import missing_module, not_installed

# npm's placeholder for a project without tests: running it only prints this error.
NO_TEST_SCRIPT = "no test specified"
LOCKFILES = {"pnpm-lock.yaml": "pnpm", "yarn.lock": "yarn", "package-lock.json": "npm", "bun.lockb": "bun"}


def _under(listing: list[str], root: str) -> list[PurePosixPath]:
    """The listed paths relative to the project root (the listing is `find .` output)."""
    base = PurePosixPath(root)
    out = []
    for line in listing:
        path = PurePosixPath(line.strip().removeprefix("./"))
        if root in ("", "."):
            out.append(path)
        elif base in path.parents:
            out.append(path.relative_to(base))
    return out


def read_package_json(text: str) -> str | None:
    """`scripts.test` of a package.json's text (None when absent, unreadable or npm's placeholder)."""
    start = text.find("{")
    try:
        data = json.loads(text[start : text.rfind("}") + 1]) if start >= 0 else {}
    except json.JSONDecodeError:  # cut by the terminal's output limit: the script's own line still says it
        found = re.search(r'"test"\s*:\s*"((?:[^"\\]|\\.)*)"', text)
        data = {"scripts": {"test": json.loads(f'"{found.group(1)}"')}} if found else {}
    script = (data.get("scripts") or {}).get("test") if isinstance(data, dict) else None
    return script if isinstance(script, str) and NO_TEST_SCRIPT not in script else None


def package_manager(listing: list[str], root: str) -> str:
    """The package manager a Node project's lockfile names; npm when there is none."""
    names = {p.name for p in _under(listing, root) if len(p.parts) == 1}
    return next((pm for lock, pm in LOCKFILES.items() if lock in names), "npm")


def src_packages(listing: list[str], root: str) -> list[str]:
    """Packages under `src/` (`src/<pkg>/*.py`): a src layout imports them only with
    `PYTHONPATH=src` (or an install of the checkout), so the expert runs its tests that way."""
    found = []
    for path in _under(listing, root):
        # a namespace package (`where = src` without `__init__.py`) shows as any module in a folder under src/
        if len(path.parts) == 3 and path.parts[0] == "src" and path.suffix == ".py" and path.parts[1].isidentifier():
            found.append(path.parts[1])
    return sorted(set(found))


def local_modules(listing: list[str], root: str) -> set[str]:
    """Top-level module names the checkout itself provides (a missing one is an import path problem, not a
    package to install)."""
    names = set(src_packages(listing, root))
    for path in _under(listing, root):
        if len(path.parts) == 2 and path.name == "__init__.py":
            names.add(path.parts[0])
        elif len(path.parts) == 1 and path.suffix == ".py":
            names.add(path.stem)
    return names


def node_filter(script: str, name: str) -> str:
    """The arguments that narrow a Node test script to one named test, by the runner the script starts."""
    quoted = shlex.quote(name)
    if re.search(r"\b(jest|vitest)\b", script):
        return f"-t {quoted}"
    if re.search(r"\bmocha\b", script):
        return f"--grep {quoted}"
    if re.search(r"\bnode\b.*--test\b", script):
        return f"--test-name-pattern {quoted}"
    return ""


class Declared:
    """What the expert read from the project before running it: its Node test script and package manager, its
    `src/` packages and the modules the checkout itself provides."""

    def __init__(self, listing: str = "", root: str = ".", package_json: str | None = None):
        lines = listing.splitlines()
        self.root = root
        self.test_script = read_package_json(package_json) if package_json else None
        self.pm = package_manager(lines, root)
        self.src = src_packages(lines, root)
        self.local = local_modules(lines, root)

    def test_command(self, extra: str = "") -> str:
        """The package manager's test run, with arguments for the script (npm needs `--` before them)."""
        if not extra:
            return f"{self.pm} test"
        return f"{self.pm} test {'-- ' if self.pm == 'npm' else ''}{extra}"


def go_run_pattern(names: list[str]) -> str:
    """`go test -run`'s pattern for exactly these tests (`TestX/sub` runs the subtest `sub` of `TestX`)."""
    if len(names) == 1 and "/" in names[0]:
        return shlex.quote("/".join(f"^{part}$" for part in names[0].split("/")))
    return shlex.quote(f"^{names[0]}$" if len(names) == 1 else f"^({'|'.join(names)})$")


def missing_fact(kind: str, text: str, declared: Declared) -> str | None:
    """The missing-dependency fact, with the fix a developer would apply. A module the checkout itself provides (a
    src layout's package, a relative path) is an import path problem: installing it from an index would test the
    index's copy, not this checkout."""
    if program := not_installed(text):
        fix = f"{declared.pm} install" if kind == "node" else f"install {program}"
        return f"'{program}' is not installed (the project's dependencies are not installed; fix: {fix})"
    missing = missing_module(text)
    if not missing:
        return None
    if missing.startswith("."):
        return f"cannot load '{missing}': a path in the project that is not there (not a package; built first?)"
    if kind == "python" and missing in declared.local:
        where, path = ("src/", "src") if missing in declared.src else ("the checkout", ".")
        root = "" if declared.root in ("", ".") else f"{declared.root}/"
        return f"'{missing}' is the project itself ({where}), not importable as run (fix: PYTHONPATH={root}{path})"
    fix = {"python": f"pip install {missing}", "node": f"{declared.pm} install"}.get(kind, f"install {missing}")
    return f"missing dependency '{missing}' (fix: {fix})"
