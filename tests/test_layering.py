"""docs/ARCHITECTURE.md's table of rooms is kept true by reading the code: every `import terminus...`, including
those inside functions, is an edge. A room imports only the rooms its last column names, each above it in the
table (`errors` is for everyone, `config` and `runspec` for every room below their row, `cli` takes anything), and
no module reaches itself through a chain of imports. The table had drifted (4 of 7 claims checked were false) and
two circles hid behind imports inside functions (issue 30)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src"
EVERYONE = {"errors"}
# For every room below their row of the table; the rooms above it (the sandbox among them: it owns its spec) know no
# experiment config.
BELOW_CONFIG = {"settings", "config", "runspec"}


def _rooms() -> tuple[list[str], dict[str, set[str]]]:
    """The rooms in table order (a row of several rooms is one level) and what each may import."""
    text = (ROOT / "docs" / "ARCHITECTURE.md").read_text()
    section = text.split("## Rooms", 1)[1].split("\n## ", 1)[0]
    order, allowed = [], {}
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) < 3 or not cells[0].startswith("`"):
            continue
        rooms = [name.rstrip("/").removesuffix(".py") for name in re.findall(r"`([^`]+)`", cells[0])]
        may = cells[-1]
        plain = re.sub(r"\([^)]*\)", "", may)  # what a parenthesis adds is commentary
        names = {n.split(".")[0] for n in re.findall(r"`([^`]+)`", plain)}
        for room in rooms:
            order.append(room)
            allowed[room] = {"*"} if may == "everything" else names
    return order, allowed


def _module_name(path: Path) -> str:
    parts = path.relative_to(SRC).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports() -> dict[str, set[str]]:
    """Module -> the terminus modules it imports (an imported name that is a module counts as that module)."""
    files = {_module_name(p): p for p in (SRC / "terminus").rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for module, path in files.items():
        targets = set()
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                assert node.level == 0, f"{path}: relative import (the project imports absolutely)"
                names = [node.module or ""] + [f"{node.module}.{a.name}" for a in node.names]
            for name in names:
                while name and name not in files:
                    name = name.rpartition(".")[0]
                if name.startswith("terminus.") and name != module and not module.startswith(name + "."):
                    targets.add(name)
        graph[module] = targets
    return graph


def _room(module: str) -> str:
    return module.split(".")[1]


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_no_module_reaches_itself_through_imports():
    assert _cycles(_imports()) == []


def test_the_cycle_finder_finds_a_circle_through_a_function_level_import():
    graph = {"terminus.a.x": {"terminus.b.y"}, "terminus.b.y": {"terminus.a.x"}, "terminus.c": set()}
    assert _cycles(graph) == [["terminus.a.x", "terminus.b.y"]]


def test_every_room_is_in_the_table():
    order, _ = _rooms()
    rooms = {_room(m) for m in _imports() if m != "terminus"}
    assert rooms - set(order) == set(), "add the room to docs/ARCHITECTURE.md's table"


def test_rooms_import_only_what_the_table_allows_and_only_upward():
    order, allowed = _rooms()
    level = {room: i for i, room in enumerate(order)}
    for names in (
        ["errors", "settings", "config", "runspec"],
        ["determinism", "reproducibility"],
    ):  # one row, one level
        for name in names:
            level[name] = level[names[0]]
    wrong = []
    for module, targets in sorted(_imports().items()):
        if module == "terminus":
            continue
        room = _room(module)
        for target in sorted(targets):
            other = _room(target)
            if other == room or other in EVERYONE:
                continue
            if other in BELOW_CONFIG and level[room] >= level[other]:  # its own row too (runspec reads config)
                continue
            if "*" not in allowed[room] and other not in allowed[room]:
                wrong.append(f"{module} imports {target}: the table does not let `{room}` import `{other}`")
            elif level[other] >= level[room]:
                wrong.append(f"{module} imports {target}: `{other}` is not above `{room}` in the table")
    assert wrong == []


def test_the_sandbox_imports_no_experiment_config():
    """The sandbox owns its spec (`sandbox.spec.SandboxSpec`): nothing of it reads the config or the run spec."""
    config = {"terminus.config", "terminus.runspec"}
    reads = {m: t & config for m, t in _imports().items() if m.startswith("terminus.sandbox") and t & config}
    assert reads == {}


# Third-party packages whose import costs a large part of a second or more, or loads a GPU or serving engine
# (measured with `python -X importtime`): a module may import a terminus module that pulls one of them inside a
# function, so that `terminus --help`, the Snakefile and light stages do not pay for it. (jsonschema alone is
# ~60 ms, but ~0.8 s where jupyter's format extras installed rfc3987-syntax, as in this project's environment;
# `tasks.record` and `config` load it only when they validate, so no terminus module pulls it at its top.)
HEAVY = {
    "torch", "transformers", "trl", "datasets", "vllm", "peft", "accelerate", "tokenizers", "tiktoken",  # models
    "jsonschema", "pandas", "seaborn", "matplotlib", "IPython",  # slow to import
    "docker", "openai", "httpx", "mcp", "uvicorn",  # clients and servers
}  # fmt: skip


def _top_level_imports(path: Path) -> list[str]:
    """What a module imports when it is imported: its module-level import statements (not those in functions or
    under `if TYPE_CHECKING`), each name also as `module.name` (which may be a submodule)."""
    names = []
    for node in ast.parse(path.read_text(), str(path)).body:
        for stmt in node.body if isinstance(node, ast.Try) else [node]:
            if isinstance(stmt, ast.Import):
                names += [a.name for a in stmt.names]
            elif isinstance(stmt, ast.ImportFrom) and stmt.module:
                names += [stmt.module] + [f"{stmt.module}.{a.name}" for a in stmt.names]
    return names


def _heavy_packages() -> dict[str, set[str]]:
    """Module -> the HEAVY packages that importing it loads, through every module-level import, its parents' too."""
    return _heavy_through({_module_name(p): _top_level_imports(p) for p in (SRC / "terminus").rglob("*.py")})


def _heavy_through(direct: dict[str, list[str]]) -> dict[str, set[str]]:
    """Module -> the HEAVY packages it loads, from what each module imports at its top (`direct`)."""

    def module_of(name: str) -> str:
        while name and name not in direct:
            name = name.rpartition(".")[0]
        return name

    heavy = {}
    for module in direct:
        seen, todo, found = set(), [module], set()
        while todo:
            current = todo.pop()
            if current in seen:
                continue
            seen.add(current)
            parts = current.split(".")
            todo += [".".join(parts[:i]) for i in range(2, len(parts))]
            for name in direct[current]:
                if name.startswith("terminus."):
                    todo += [module_of(name)] if module_of(name) else []
                elif name.split(".")[0] in HEAVY:
                    found.add(name.split(".")[0])
        heavy[module] = found
    return heavy


def test_imports_inside_functions_are_heavy_ones_or_say_why():
    """A terminus import inside a function is there on purpose: what it imports loads a HEAVY package, or its line
    says `deferred:` and why (a cycle that only a late import breaks). Every other import is at the module's top,
    where a reader and the layering test see it (issue 30: 124 imports hid inside functions, two circles too)."""
    heavy = _heavy_packages()
    wrong = []
    for path in sorted((SRC / "terminus").rglob("*.py")):
        lines = path.read_text().splitlines()
        for func in ast.walk(ast.parse(path.read_text(), str(path))):
            if not isinstance(func, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            for node in ast.walk(func):
                if not isinstance(node, ast.ImportFrom) or not (node.module or "").startswith("terminus"):
                    continue
                targets = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
                loads = set().union(*(heavy.get(t, set()) for t in targets))
                if not loads and "deferred:" not in lines[node.lineno - 1]:
                    wrong.append(f"{path.relative_to(ROOT)}:{node.lineno} imports {node.module} inside a function")
    assert wrong == [], "move these to the module's top (they load nothing heavy):\n" + "\n".join(wrong)


def test_the_heavy_import_check_sees_through_chains():
    direct = {
        "terminus.a": [],
        "terminus.a.x": ["json", "terminus.b.y"],  # through b.y, and through b's own top
        "terminus.b": ["pandas"],
        "terminus.b.y": ["terminus.c.z"],
        "terminus.c": [],
        "terminus.c.z": ["torch.nn"],
        "terminus.d": ["terminus.c"],
    }
    heavy = _heavy_through(direct)
    assert heavy["terminus.a.x"] == {"pandas", "torch"} and heavy["terminus.d"] == set()
    real = _heavy_packages()
    assert "pandas" in real["terminus.analysis.notebook"]  # imported at its top
    assert real["terminus.cli.support"] == set() and real["terminus.runspec"] == set()
    assert real["terminus.tasks.record"] == set()  # jsonschema loads when a record is validated
