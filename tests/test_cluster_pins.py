"""The cluster's pinned set (environment.yml) resolves: the pins agree with TRL's declared vLLM range (the installed
trl's metadata), with vLLM's own pins (a snapshot of its wheel's metadata in tests/data/cluster-pins/, refreshed by
scripts/refresh_cluster_metadata.py), with pyproject.toml's requirements, and torch's CUDA build with vLLM's.
Offline: no GPU wheel is downloaded."""

from __future__ import annotations

import importlib.metadata
import re
import tomllib
from pathlib import Path

import pytest
import yaml
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[1]
SNAPSHOTS = ROOT / "tests" / "data" / "cluster-pins"
REFRESH = "python scripts/refresh_cluster_metadata.py"
# The cluster: Linux x86_64 with environment.yml's Python; no extras asked of vLLM or torch.
CLUSTER = {
    "python_version": "3.11",
    "python_full_version": "3.11.0",
    "sys_platform": "linux",
    "platform_system": "Linux",
    "platform_machine": "x86_64",
    "os_name": "posix",
}
MUST_PIN = ("torch", "vllm", "transformers", "trl")


def pins(environment: str) -> tuple[dict[str, str], list[str]]:
    """environment.yml's `name==version` pip lines, and its pip options (index URLs)."""
    deps = yaml.safe_load(environment)["dependencies"]
    pip = next(d["pip"] for d in deps if isinstance(d, dict) and "pip" in d)
    exact, options = {}, []
    for line in pip:
        if line.startswith("-"):
            options.append(line)
            continue
        req = Requirement(line)
        specs = list(req.specifier)
        assert len(specs) == 1 and specs[0].operator == "==", f"environment.yml: {line!r} is not an exact pin"
        exact[canonicalize_name(req.name)] = specs[0].version
    return exact, options


def requires(lines: list[str], extra: str | None = None) -> list[Requirement]:
    """The requirements that apply on the cluster: those without an extra, or those of `extra` alone."""
    out = []
    for req in map(Requirement, lines):
        of_extra = req.marker is not None and "extra" in str(req.marker)
        if (extra is None) == of_extra:
            continue
        if req.marker is None or req.marker.evaluate({**CLUSTER, "extra": extra or ""}):
            out.append(req)
    return out


def snapshot(name: str, version: str) -> list[str] | None:
    path = SNAPSHOTS / f"{name}-{version}.txt"
    if not path.is_file():
        return None
    return [
        line.split(":", 1)[1].strip() for line in path.read_text().splitlines() if line.startswith("Requires-Dist:")
    ]


def cuda_majors(texts: list[str]) -> set[int]:
    """CUDA majors named by requirements (nvidia-nccl-cu13, [cu13], cuda-toolkit==13.0.3) or index URLs (cu128)."""
    found = {int(m[:2]) for t in texts for m in re.findall(r"\bcu(\d{2,3})\b", t)}
    found |= {int(m) for t in texts for m in re.findall(r"^cuda-toolkit\b.*==\s*(\d+)\.", t)}
    return found


def problems(environment: str, pyproject: str, trl_requires: list[str], trl_version: str) -> list[str]:
    exact, options = pins(environment)
    found = [f"environment.yml does not pin {name}" for name in MUST_PIN if name not in exact]
    if found:
        return found

    def check(source: str, reqs: list[Requirement]) -> None:
        for req in reqs:
            name = canonicalize_name(req.name)
            if name in exact and not req.specifier.contains(exact[name], prereleases=True):
                found.append(f"{source} wants {req}, environment.yml pins {name}=={exact[name]}")

    # TRL's declared vLLM range is that of the trl we pin (the installed one here).
    if trl_version != exact["trl"]:
        found.append(f"the installed trl is {trl_version}, environment.yml pins {exact['trl']}: its range is unknown")
    trl_vllm = [r for r in requires(trl_requires, extra="vllm") if canonicalize_name(r.name) == "vllm"]
    if not trl_vllm:
        found.append("trl declares no vllm range in its `vllm` extra")
    check(f"trl {trl_version} (its vllm extra)", trl_vllm)
    check(f"trl {trl_version}", requires(trl_requires))

    metadata = {}
    for name in ("vllm", "torch"):
        lines = snapshot(name, exact[name])
        if lines is None:
            found.append(f"no metadata snapshot of {name} {exact[name]} in {SNAPSHOTS.name}/: run `{REFRESH}`")
        metadata[name] = requires(lines or [])
        check(f"{name} {exact[name]}", metadata[name])

    project = tomllib.loads(pyproject)["project"]
    check("pyproject.toml's dependencies", [Requirement(r) for r in project["dependencies"]])
    gpu = [Requirement(r) for r in project["optional-dependencies"]["gpu"]]
    check("pyproject.toml's gpu extra", gpu)
    if not any(canonicalize_name(r.name) == "vllm" and str(r.specifier) == f"=={exact['vllm']}" for r in gpu):
        found.append(f"pyproject.toml's gpu extra should pin vllm=={exact['vllm']} as environment.yml does")

    # vLLM's PyPI wheel is built against PyPI's torch: the CUDA of both, and of any PyTorch index named, agree.
    torch_cuda = cuda_majors([str(r) for r in metadata["torch"]])
    vllm_cuda = cuda_majors([str(r) for r in metadata["vllm"]])
    index_cuda = cuda_majors([o for o in options if "download.pytorch.org" in o])
    if len(torch_cuda | vllm_cuda | index_cuda) > 1:
        found.append(f"CUDA builds disagree: torch {torch_cuda}, vllm {vllm_cuda}, PyTorch index {index_cuda}")
    return found


def current(**replace: str) -> dict:
    """The repository's inputs; `replace` swaps one line of environment.yml (old text -> new text) first."""
    environment = (ROOT / "environment.yml").read_text()
    for old, new in replace.items():
        assert old in environment
        environment = environment.replace(old, new)
    return {
        "environment": environment,
        "pyproject": (ROOT / "pyproject.toml").read_text(),
        "trl_requires": importlib.metadata.requires("trl") or [],
        "trl_version": importlib.metadata.version("trl"),
    }


def test_the_cluster_set_agrees_with_the_packages_metadata():
    assert problems(**current()) == []


def test_trl_declares_the_range_its_import_check_warns_outside():
    [req] = [r for r in requires(importlib.metadata.requires("trl"), extra="vllm") if r.name == "vllm"]
    assert req.specifier.contains("0.31.0") and not req.specifier.contains("0.34.0")


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        ("vllm==0.31.0", "vllm==0.34.0", "trl 1.16.0 (its vllm extra) wants vllm"),
        ("transformers==5.17.0", "transformers==5.19.0", "vllm 0.31.0 wants transformers"),
        ("torch==2.13.0", "torch==2.14.0", "vllm 0.31.0 wants torch==2.13.0"),
        ("trl==1.16.0", "trl==1.15.0", "the installed trl is 1.16.0"),
        ("  - pip:\n", "  - pip:\n      - --extra-index-url https://download.pytorch.org/whl/cu128\n", "CUDA builds"),
        ("      - transformers==5.17.0\n", "", "does not pin transformers"),
    ],
)
def test_a_pin_that_disagrees_is_reported(old, new, expected):
    found = problems(**current(**{old: new}))
    assert any(expected in p for p in found), found


def test_a_pin_without_a_snapshot_asks_for_a_refresh():
    found = problems(**current(**{"vllm==0.31.0": "vllm==0.30.0"}))
    assert f"no metadata snapshot of vllm 0.30.0 in cluster-pins/: run `{REFRESH}`" in found
