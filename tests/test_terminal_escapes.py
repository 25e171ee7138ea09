"""Issue 39: what `terminus exec` and `terminus run` print on a terminal holds no control character a terminal would
obey. The trigger is a repository whose failing test's message carries C1 escapes (OSC 52, a clipboard write; CSI
2J, a screen clear): the scripted subagent quotes the first failure in its answer, as a model would. The trajectory
file keeps the exact text."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest

from test_exec_ux import on_a_terminal

TERMINUS = [sys.executable, "-m", "terminus.cli"]
QUERY = "run the tests and tell me what fails"
# OSC 52 (set the clipboard to "pwned"), ended by ST; CSI 2J (clear the screen)
PAYLOAD = "\x9d52;c;cHduZWQ=\x9c \x9b2J"
OBEYED = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")  # all but tab and newline (and \r, checked apart)


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    repo = tmp_path_factory.mktemp("escapes")
    (repo / "pyproject.toml").write_text("[project]\nname = 'calc'\nversion = '0'\n")
    (repo / "test_calc.py").write_text(f"def test_add():\n    assert 1 + 1 == 3, {PAYLOAD!r}\n")
    return repo


def _clean(text: str) -> None:
    found = sorted({hex(ord(c)) for c in OBEYED.findall(text)})
    assert not found, f"control characters reach the terminal: {found}"


def test_exec_prints_the_escapes_of_an_answer_as_visible_text(project, tmp_path):
    saved = tmp_path / "episode.json"
    args = ["exec", "--repo", str(project), "--query", QUERY, "--sandbox", "local"]
    done = subprocess.run([*TERMINUS, *args, "--trajectory", str(saved)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    # The sandbox's output filter already drops C1 controls (sandbox/output.py), so the model read, and the
    # answer quotes, what is left of the payload; what the terminal gets holds no control character either way.
    assert "52;c;cHduZWQ= 2J" in done.stdout
    _clean(done.stdout + done.stderr)
    kept = json.dumps(json.loads(saved.read_text()), ensure_ascii=False)
    assert "52;c;cHduZWQ= 2J" in kept and not OBEYED.search(kept.replace("\n", ""))  # as the model read it

    as_json = subprocess.run([*TERMINUS, *args, "--json"], capture_output=True, text=True, timeout=300)
    _clean(as_json.stdout)
    assert "52;c;cHduZWQ= 2J" in json.dumps(json.loads(as_json.stdout), ensure_ascii=False)  # the same value

    verbose = subprocess.run([*TERMINUS, *args, "--verbose"], capture_output=True, text=True, timeout=300)
    _clean(verbose.stdout + verbose.stderr)


def test_exec_on_a_terminal_draws_only_its_own_status_line(project):
    screen = on_a_terminal(["exec", "--repo", str(project), "--query", QUERY, "--sandbox", "local"])
    assert "52;c;cHduZWQ=" in screen
    _clean(screen.replace("\r\x1b[K", "").replace("\r\n", "\n"))


def test_run_prints_the_escapes_of_command_output_as_visible_text(tmp_path):
    (tmp_path / "emit.py").write_text(f"print({PAYLOAD!r})\n")
    done = subprocess.run(
        [*TERMINUS, "run", "--sandbox", "local", "--repo", str(tmp_path), "python3 emit.py"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "52;c;cHduZWQ= 2J" in done.stdout
    _clean(done.stdout + done.stderr)


def test_text_that_did_not_pass_the_sandbox_filter_is_shown_visibly():
    """A model's own words (an endpoint's answer) reach `exec`'s printing unfiltered: each control is shown."""
    from terminus.cli.agent import shown, shown_json

    assert shown(PAYLOAD) == "\\x9d52;c;cHduZWQ=\\x9c \\x9b2J"
    assert shown("\x1b]0;title\x07ok\tand\n") == "^[]0;title^Gok\tand\n"
    _clean(shown_json({"answer": PAYLOAD + "\x1b[2J\x7f"}))
