"""The main agent's read tool on a file of any size: it shows the head and the tail of a 600 MB file without
copying or reading the file whole (it once decoded all of it to show 30 KB), and small files as before."""

from __future__ import annotations

import json
import subprocess
import sys

from terminus.mainagent.harness import MAIN_OUTPUT_CHARS, Workbench
from terminus.sandbox import SandboxSpec, make_sandbox

MB = 1024 * 1024

# In a process of its own: a sandbox whose command makes a 600 MB file (sparse: no disk is written), then the read
# tool on it; prints the tool's answer and how much the process's peak RSS grew while it ran.
READ_HUGE = """
import json, resource
from terminus.mainagent.harness import Workbench
from terminus.sandbox.spec import SandboxSpec
from terminus.sandbox import make_sandbox

def peak():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024

with make_sandbox(SandboxSpec()) as box:
    done = box.run(
        "printf 'FIRST-LINE\\\\n' > huge.log && truncate -s 600M huge.log && printf 'LAST-LINE\\\\n' >> huge.log", 60
    )
    assert done.exit_code == 0, done.output
    bench = Workbench(box, SandboxSpec(), None, 1)
    bench.read("missing.txt")  # warm up the file channel
    before = peak()
    shown = bench.read("huge.log")
    grown = peak() - before
    leftovers = [p.name for p in box.ws.state.iterdir() if p.name.startswith("dst-")]
print(json.dumps({"shown": shown, "grown": grown, "leftovers": leftovers}))
"""


def test_the_read_tool_shows_a_huge_files_ends_in_bounded_memory(tmp_path):
    done = subprocess.run([sys.executable, "-c", READ_HUGE], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["grown"] < 50 * MB, f"reading a 600 MB file grew the host process by {result['grown'] // MB} MB"
    shown = result["shown"]
    assert shown.startswith("FIRST-LINE\n") and shown.endswith("LAST-LINE\n")
    assert "bytes of a 629145610-byte file truncated" in shown
    assert len(shown) < MAIN_OUTPUT_CHARS + 200
    assert result["leftovers"] == []


def test_small_files_read_as_before(tmp_path):
    (tmp_path / "a.py").write_text("print('hi')\n")
    (tmp_path / "long.txt").write_text("".join(f"line {i}\n" for i in range(10_000)))  # 99 KB
    with make_sandbox(SandboxSpec(), tmp_path) as box:
        bench = Workbench(box, SandboxSpec(), None, 1)
        assert bench.read("a.py") == "print('hi')\n"
        long = bench.read("long.txt")
        assert long.startswith("line 0\n") and long.endswith("line 9999\n")
        assert f"[... {98890 - MAIN_OUTPUT_CHARS} characters truncated ...]" in long
        assert bench.read("nope.txt") == "error: no file nope.txt"
