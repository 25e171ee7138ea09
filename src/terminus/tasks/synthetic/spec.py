"""The spec of a synthetic project: its domain's functions and cases, its layout, and the injected fault.

Expressions use only `+ - *` and parentheses on small non-negative integers, so they mean the same in Python,
JavaScript, C, Rust and Go, and the expected value of every test case (and which cases a mutated operator
breaks) is computed here in Python.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass, field

from terminus.errors import TerminusError


class SpecError(TerminusError, ValueError):
    """A synthetic project the corpus config asks for that the generator does not make (language, domain, variant)."""


LANGUAGES = ("python", "node", "cmake", "rust", "go")
VARIANTS = ("pass", "fail", "broken", "missing-dep", "warnings")
# variant -> task types it yields
TASK_TYPES = {
    "pass": ("test-execution",),
    "fail": ("test-execution", "error-diagnosis"),
    "broken": ("build/compile", "error-diagnosis"),
    "missing-dep": ("dependency",),
    "warnings": ("build/compile",),
}
# Which variants a language supports: interpreted languages have no compiler warnings; the dependency
# variant needs a package manager whose missing package the expert can name (pip, npm).
SUPPORTED = {
    "python": ("pass", "fail", "broken", "missing-dep"),
    "node": ("pass", "fail", "broken", "missing-dep"),
    "cmake": ("pass", "fail", "broken", "warnings"),
    "rust": ("pass", "fail", "broken", "warnings"),
    "go": ("pass", "fail", "broken"),
}

# domain -> (functions as (name, params, expression), packages it might plausibly import)
DOMAINS: dict[str, tuple[list[tuple[str, tuple[str, ...], str]], tuple[str, str]]] = {
    "billing": (
        [
            ("line_total", ("quantity", "unit_price"), "quantity * unit_price"),
            ("apply_discount", ("total", "discount"), "total - discount"),
            ("add_shipping", ("total", "shipping"), "total + shipping"),
            ("invoice_total", ("subtotal", "tax", "fees"), "subtotal + tax + fees"),
        ],
        ("prettytable", "pendulum"),
    ),
    "inventory": (
        [
            ("restock", ("stock", "delivered"), "stock + delivered"),
            ("ship_order", ("stock", "ordered"), "stock - ordered"),
            ("shelf_capacity", ("rows", "slots"), "rows * slots"),
            ("reorder_gap", ("target", "stock", "incoming"), "target - (stock + incoming)"),
        ],
        ("prettytable", "humanize"),
    ),
    "geometry": (
        [
            ("rectangle_area", ("width", "height"), "width * height"),
            ("rectangle_perimeter", ("width", "height"), "2 * (width + height)"),
            ("border_tiles", ("side",), "4 * side - 4"),
            ("box_volume", ("width", "height", "depth"), "width * height * depth"),
        ],
        ("shapely", "pint"),
    ),
    "payroll": (
        [
            ("gross_pay", ("hours", "rate"), "hours * rate"),
            ("overtime_pay", ("hours", "rate"), "hours * rate * 2"),
            ("net_pay", ("gross", "deductions"), "gross - deductions"),
            ("annual_salary", ("monthly",), "monthly * 12"),
        ],
        ("holidays", "pendulum"),
    ),
    "scoreboard": (
        [
            ("total_points", ("goals", "assists"), "goals * 2 + assists"),
            ("apply_penalty", ("score", "fouls"), "score - fouls * 3"),
            ("streak_bonus", ("score", "streak"), "score + streak * streak"),
            ("goal_difference", ("scored", "conceded"), "scored - conceded"),
        ],
        ("prettytable", "inflect"),
    ),
    "thermostat": (
        [
            ("heat_delta", ("target", "current"), "target - current"),
            ("energy_cost", ("kwh", "price"), "kwh * price"),
            ("degree_hours", ("delta", "hours"), "delta * hours"),
            ("setpoint_after", ("setpoint", "steps", "step_size"), "setpoint + steps * step_size"),
        ],
        ("pint", "humanize"),
    ),
    "library": (
        [
            ("late_fee", ("days_late", "daily_fee"), "days_late * daily_fee"),
            ("copies_available", ("owned", "on_loan"), "owned - on_loan"),
            ("shelf_slots", ("shelves", "per_shelf"), "shelves * per_shelf"),
            ("renewal_due", ("borrowed_on", "loan_days", "renewals"), "borrowed_on + loan_days * (renewals + 1)"),
        ],
        ("dateparser", "inflect"),
    ),
    "fleet": (
        [
            ("fuel_needed", ("distance", "per_km"), "distance * per_km"),
            ("remaining_range", ("range_km", "driven"), "range_km - driven"),
            ("seats_total", ("buses", "seats"), "buses * seats"),
            ("route_length", ("legs", "leg_km", "detour"), "legs * leg_km + detour"),
        ],
        ("dateparser", "humanize"),
    ),
}
NODE_PACKAGES = {
    "prettytable": "cli-table3",
    "pendulum": "currency.js",
    "humanize": "pretty-ms",
    "shapely": "@turf/area",
    "pint": "convert-units",
    "holidays": "date-holidays",
    "inflect": "pluralize",
    "dateparser": "dayjs",
}
CASE_LABELS = ("typical", "with_zero", "larger_values")
SUBFOLDERS = ("services", "packages", "backend", "apps")
MUTATIONS = {"+": "-", "-": "+", "*": "+"}


@dataclass
class Function:
    name: str
    params: tuple[str, ...]
    expr: str
    cases: list[tuple[str, tuple[int, ...], int]] = field(default_factory=list)  # (label, args, expected)


@dataclass
class Spec:
    """Everything that decides a project's files and facts; the per-language renderers turn it into files."""

    language: str
    domain: str
    variant: str
    functions: list[Function]
    package: str  # project / crate / module name
    subfolder: str = ""  # "" or e.g. "services/billing"
    suites: int = 1  # test files
    verbose_lines: int = 0  # log lines each test prints (shown on failure by most runners)
    warnings: int = 0  # unused variables injected (compiled languages)
    mutated: int | None = None  # index of the function whose operator flips (fail) or breaks (broken)
    mutated_expr: str | None = None
    dependency: str | None = None


def evaluate(expr: str, params: tuple[str, ...], args: tuple[int, ...]) -> int:
    namespace = dict(zip(params, args, strict=True))
    if not re.fullmatch(r"[\w\s+*()-]+", expr):
        raise ValueError(f"unsupported expression {expr!r}")
    return int(eval(expr, {"__builtins__": {}}, namespace))


def mutate(expr: str, rng: random.Random) -> str | None:
    """Flip one operator (never the one inside a literal); None if the expression has none."""
    spots = [m.start() for m in re.finditer(r"(?<=\s)[+*-](?=\s)", expr)]
    if not spots:
        return None
    at = rng.choice(spots)
    return expr[:at] + MUTATIONS[expr[at]] + expr[at + 1 :]


def make_spec(language: str, domain: str, variant: str, index: int, seed: int, **options) -> Spec:
    """Deterministic in (language, domain, variant, index, seed): the same call gives the same project."""
    if language not in LANGUAGES:
        raise SpecError(f"unknown language {language!r}; choose from {', '.join(LANGUAGES)}")
    if domain not in DOMAINS:
        raise SpecError(f"unknown domain {domain!r}; choose from {', '.join(DOMAINS)}")
    if variant not in SUPPORTED[language]:
        raise SpecError(f"variant {variant!r} is not supported for {language} (supported: {SUPPORTED[language]})")
    # The repository (functions, cases, layout) depends on the repo seed only; the variant changes the fault.
    repo_rng = random.Random(f"{seed}/{language}/{domain}/{index}")
    table, packages = DOMAINS[domain]
    chosen = sorted(repo_rng.sample(range(len(table)), k=repo_rng.choice((2, 3, 4))))
    functions = []
    for i in chosen:
        name, params, expr = table[i]
        labels = CASE_LABELS[: repo_rng.choice((2, 3))]
        cases = []
        for label in labels:
            if label == "with_zero":
                args = tuple(0 if j == len(params) - 1 else repo_rng.randint(1, 9) for j in range(len(params)))
            elif label == "larger_values":
                args = tuple(repo_rng.randint(10, 60) for _ in params)
            else:
                args = tuple(repo_rng.randint(2, 9) for _ in params)
            cases.append((label, args, evaluate(expr, params, args)))
        functions.append(Function(name, params, expr, cases))
    spec = Spec(
        language=language,
        domain=domain,
        variant=variant,
        functions=functions,
        package=domain
        if index == 0
        else f"{domain}{['', '_core', '_kit', '_lib', '_svc'][index % 5]}{index // 5 or ''}",
        subfolder=f"{repo_rng.choice(SUBFOLDERS)}/{domain}"
        if repo_rng.random() < options.get("subfolder_p", 0.3)
        else "",
        suites=2 if len(functions) >= 3 and repo_rng.random() < options.get("suites_p", 0.5) else 1,
        verbose_lines=options.get("verbose_lines", 120) if repo_rng.random() < options.get("verbose_p", 0.5) else 0,
    )
    rng = random.Random(f"{seed}/{language}/{domain}/{index}/{variant}")
    if variant == "fail":
        # Pick a function and a flip that breaks at least one of its cases (a flip that changes nothing is no fault).
        for _ in range(50):
            k = rng.randrange(len(functions))
            new = mutate(functions[k].expr, rng)
            if new and any(evaluate(new, functions[k].params, a) != e for _, a, e in functions[k].cases):
                spec.mutated, spec.mutated_expr = k, new
                break
        else:
            raise ValueError(f"no failing mutation found for {language}/{domain}/{index}")
    elif variant == "broken":
        spec.mutated = rng.randrange(len(functions))
    elif variant == "missing-dep":
        spec.dependency = packages[rng.randrange(2)]
        if language == "node":
            spec.dependency = NODE_PACKAGES[spec.dependency]
    elif variant == "warnings":
        spec.warnings = rng.randint(1, 4)
    return spec
