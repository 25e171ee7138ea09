"""Snapshot the dependency metadata of the cluster's pinned vLLM and torch into tests/data/cluster-pins/, so that
tests/test_cluster_pins.py can check environment.yml against them offline, without the GPU wheels.

    python scripts/refresh_cluster_metadata.py            # the versions environment.yml pins
    python scripts/refresh_cluster_metadata.py vllm==0.31.0 torch==2.13.0

For each package it reads the Linux x86_64 wheel's METADATA from PyPI: the PEP 658 `.metadata` file when the
simple index offers one, otherwise the wheel's zip directory and METADATA member through HTTP range requests
(a few hundred KB of a 300 MB wheel). Only the Requires-Python and Requires-Dist lines are kept.
"""

from __future__ import annotations

import io
import json
import sys
import urllib.request
import zipfile
from datetime import date
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "tests" / "data" / "cluster-pins"
INDEX = "https://pypi.org/simple/{name}/"
PACKAGES = ("vllm", "torch")  # what the pin test reads: vLLM's own pins, and torch's CUDA build
PYTHON_TAGS = ("cp311-cp311", "cp38-abi3", "py3-none")  # environment.yml's Python 3.11, or any Python
PLATFORM = "manylinux_2_28_x86_64"


class HTTPRangeFile(io.RawIOBase):
    """A read-only, seekable view of a remote file that fetches the blocks it is asked for (zipfile needs only the
    central directory at the end and the one member it reads)."""

    def __init__(self, url: str, size: int, block: int = 256 * 1024) -> None:
        self.url, self.size, self.block, self.pos = url, size, block, 0
        self.blocks: dict[int, bytes] = {}

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self.pos

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        self.pos = {io.SEEK_SET: 0, io.SEEK_CUR: self.pos, io.SEEK_END: self.size}[whence] + offset
        return self.pos

    def _block(self, index: int) -> bytes:
        if index not in self.blocks:
            start = index * self.block
            end = min(self.size, start + self.block) - 1
            request = urllib.request.Request(self.url, headers={"Range": f"bytes={start}-{end}"})
            with urllib.request.urlopen(request, timeout=120) as reply:
                if reply.status != 206:
                    raise RuntimeError(f"{self.url} ignored the range request (HTTP {reply.status})")
                self.blocks[index] = reply.read()
        return self.blocks[index]

    def readinto(self, buffer) -> int:
        n = max(0, min(len(buffer), self.size - self.pos))
        data = bytearray()
        while len(data) < n:
            index, offset = divmod(self.pos + len(data), self.block)
            data += self._block(index)[offset : offset + n - len(data)]
        buffer[:n] = data
        self.pos += n
        return n


def wheel(name: str, version: str) -> dict:
    """The index entry of the package's Linux x86_64 wheel for Python 3.11."""
    request = urllib.request.Request(
        INDEX.format(name=name), headers={"Accept": "application/vnd.pypi.simple.v1+json"}
    )
    with urllib.request.urlopen(request, timeout=120) as reply:
        files = json.load(reply)["files"]
    for tag in PYTHON_TAGS:
        for entry in files:
            if entry["filename"] == f"{name}-{version}-{tag}-{PLATFORM}.whl" and not entry.get("yanked"):
                return entry
    raise SystemExit(f"no {PLATFORM} wheel of {name} {version} for Python 3.11 on PyPI")


def metadata(entry: dict) -> str:
    if entry.get("core-metadata") or entry.get("dist-info-metadata"):  # PEP 658/714: the METADATA file alone
        with urllib.request.urlopen(entry["url"] + ".metadata", timeout=120) as reply:
            return reply.read().decode()
    with zipfile.ZipFile(HTTPRangeFile(entry["url"], entry["size"])) as wheel_zip:
        [member] = [n for n in wheel_zip.namelist() if n.count("/") == 1 and n.endswith(".dist-info/METADATA")]
        return wheel_zip.read(member).decode()


def snapshot(name: str, version: str) -> Path:
    entry = wheel(name, version)
    kept = [line for line in metadata(entry).splitlines() if line.startswith(("Requires-Python:", "Requires-Dist:"))]
    header = [
        f"# Requires-Python and Requires-Dist of {entry['filename']} (sha256 {entry['hashes']['sha256']}),",
        f"# read from {INDEX.format(name=name)} on {date.today()} by scripts/refresh_cluster_metadata.py.",
        "# tests/test_cluster_pins.py checks environment.yml's pins against it offline. Do not edit by hand.",
    ]
    out = OUT / f"{name}-{version}.txt"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("\n".join(header + kept) + "\n")
    return out


def pinned() -> list[tuple[str, str]]:
    """`name==version` of PACKAGES in environment.yml's pip section."""
    deps = yaml.safe_load((ROOT / "environment.yml").read_text())["dependencies"]
    pip = next(d["pip"] for d in deps if isinstance(d, dict) and "pip" in d)
    pins = dict(line.split("==", 1) for line in pip if "==" in line and not line.startswith("-"))
    return [(name, pins[name].strip()) for name in PACKAGES]


def main(args: list[str]) -> None:
    for name, version in [tuple(a.split("==", 1)) for a in args] or pinned():
        print(f"{snapshot(name, version).relative_to(ROOT)}")


if __name__ == "__main__":
    main(sys.argv[1:])
