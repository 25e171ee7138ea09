"""The grader against hostile predictions, through `terminus swe grade` (bwrap where installed, else local): a
test log replaced by a link to a host secret, patches that reach `.git/` or leave the work tree, instance ids that
are not file names, malformed predictions, and a grade killed with SIGKILL. Each asserts that the host file is
untouched, that no new host file appears and that the secret never reaches a log or the report."""

from __future__ import annotations

import base64
import json
import os
import shlex
import subprocess
from pathlib import Path

import pytest
from typer.testing import CliRunner

from builders import TERMINUS, kill_when
from terminus.cli import app
from terminus.sandbox import Limits, SandboxSpec, tmproot
from terminus.sandbox.bwrap import bwrap_path
from terminus.swe.benchmarks import load_instances
from terminus.swe.environment import instance_sandbox, patch_from_sandbox
from terminus.swe.gitops import patch_from_tree
from terminus.swe.grade import grade_in_sandbox, grade_patch
from terminus.swe.record import GradeError

from .repos import DATA, git

BACKEND = "bwrap" if bwrap_path() else "local"
SECRET = "TERMINUS-HOST-SECRET-5f0c"


def new_file(path: str, text: str, mode: str = "100644") -> str:
    """A git diff that creates `path` holding `text`."""
    lines = text.splitlines()
    body = "".join(f"+{line}\n" for line in lines)
    return (
        f"diff --git a/{path} b/{path}\nnew file mode {mode}\nindex 0000000..1111111\n--- /dev/null\n+++ b/{path}\n"
        f"@@ -0,0 +1,{len(lines)} @@\n{body}"
    )


def _ledger_rows(swe_data, ids: list[str]) -> list[dict]:
    root, _ = swe_data
    row = json.loads((root / "verified.jsonl").read_text().splitlines()[0])
    return [{**row, "instance_id": i, "repo_path": str(root / "git" / "ledger")} for i in ids]


def _write_jsonl(path: Path, rows: list) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def _grade(tmp_path: Path, dataset: Path, predictions: Path, *extra: str):
    args = ["swe", "grade", "--dataset", str(dataset), "--predictions", str(predictions), "--sandbox", BACKEND]
    args += ["--out", str(tmp_path / "out" / "report.json"), "--logs", str(tmp_path / "out" / "logs"), *extra]
    return CliRunner().invoke(app, args)


def _files(root: Path) -> set[Path]:
    """Every file and link below `root` except the grader's own outputs."""
    return {p for p in root.rglob("*") if "out" not in p.relative_to(root).parts}


@pytest.fixture
def case(tmp_path, swe_data):
    """A dataset of one ledger instance, and a secret host file only its owner can read."""
    dataset = _write_jsonl(tmp_path / "data.jsonl", _ledger_rows(swe_data, ["acme__ledger-101"]))
    secret = tmp_path / "secret.txt"
    secret.write_text(SECRET + "\n")
    secret.chmod(0o600)
    return dataset, secret


def _predict(tmp_path: Path, patch, iid: str = "acme__ledger-101") -> Path:
    record = {"instance_id": iid, "model_name_or_path": "m", "model_patch": patch}
    return _write_jsonl(tmp_path / "preds.jsonl", [record])


def _outputs(tmp_path: Path) -> str:
    out = tmp_path / "out"
    return "\n".join(p.read_text(errors="replace") for p in out.rglob("*") if p.is_file())


def test_a_test_log_replaced_by_a_link_is_not_followed(tmp_path, swe_data, case):
    """A conftest swaps the test log for a link to a host file: the grader refuses the link and says so."""
    dataset, secret = case
    conftest = (
        "import os\n\n\ndef pytest_unconfigure(config):\n"
        "    log = os.path.join(os.environ.get('TMPDIR') or '/tmp', 'terminus-swe-test.log')\n"
        "    os.unlink(log)\n"
        f"    os.symlink({str(secret)!r}, log)\n"
    )
    root, _ = swe_data
    gold = json.loads((root / "verified.jsonl").read_text().splitlines()[0])["patch"]
    preds = _predict(tmp_path, gold + new_file("conftest.py", conftest))
    before = _files(tmp_path)
    result = _grade(tmp_path, dataset, preds)
    assert result.exit_code == 0, result.output
    log = (tmp_path / "out" / "logs" / "acme__ledger-101.log").read_text()
    assert "symbolic link" in log and "refused" in log
    assert SECRET not in _outputs(tmp_path) and SECRET not in result.output
    assert secret.read_text() == SECRET + "\n" and secret.stat().st_mode & 0o777 == 0o600
    assert _files(tmp_path) == before
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    assert report["acme__ledger-101"]["resolved"] is False


def _fixed_money(swe_data) -> str:
    root, built = swe_data
    return git("show", f"{built['ledger']['fix']}:ledger/money.py", cwd=root / "git" / "ledger")


def test_a_patch_that_plants_a_git_hook_is_refused(tmp_path, swe_data, case):
    """The hook would fire at the test setup's `git checkout` and fix the code behind the grader's back (and, under
    the local backend, write a host file): the patch is refused before any tool applies it."""
    dataset, _ = case
    marker = tmp_path / "hook-fired"
    hook = f"#!/bin/sh\ntouch {marker}\ncat > ledger/money.py <<'EOF'\n{_fixed_money(swe_data)}EOF\n"
    preds = _predict(tmp_path, new_file(".git/hooks/post-checkout", hook, "100755"))
    before = _files(tmp_path)
    result = _grade(tmp_path, dataset, preds)
    assert result.exit_code == 0, result.output
    assert "acme__ledger-101: the patch touches .git/hooks/post-checkout" in result.output
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    assert report["acme__ledger-101"]["resolved"] is False
    assert not marker.exists() and _files(tmp_path) == before


def _rename(old: str, new: str) -> str:
    return f"diff --git a/{old} b/{new}\nsimilarity index 100%\nrename from {old}\nrename to {new}\n"


def _plain(old: str, new: str) -> str:
    return f"--- {old}\n+++ {new}\n@@ -0,0 +1 @@\n+{SECRET}\n"


ESCAPES = {
    "dotdot": (lambda t: new_file("../escaped.txt", SECRET), "../escaped.txt"),
    "absolute": (lambda t: _plain("/dev/null", f"{t}/absolute.txt"), "/absolute.txt"),
    "plain-git-dir": (lambda t: _plain("/dev/null", "b/.git/config"), ".git/config"),
    "rename-to-git": (lambda t: _rename("README.md", ".git/info/attributes"), ".git/info/attributes"),
    "rename-from-outside": (lambda t: _rename("../../etc/passwd", "README.md"), "../../etc/passwd"),
    "upper-case": (lambda t: new_file(".GIT/hooks/pre-commit", "#!/bin/sh\n"), ".GIT/hooks/pre-commit"),
}


@pytest.mark.parametrize("name", list(ESCAPES))
def test_a_patch_that_leaves_the_work_tree_is_refused(tmp_path, swe_data, case, name):
    dataset, _ = case
    make, named = ESCAPES[name]
    preds = _predict(tmp_path, make(tmp_path))
    before = _files(tmp_path)
    result = _grade(tmp_path, dataset, preds)
    assert result.exit_code == 0, result.output
    assert "acme__ledger-101: the patch touches" in result.output and named in result.output
    assert _files(tmp_path) == before and SECRET not in _outputs(tmp_path).replace(named, "")


def test_ids_that_are_not_file_names_stay_inside_logs(tmp_path, swe_data):
    """Instance ids name log files: `../x`, an absolute path, a long id and odd characters map to safe names inside
    --logs, and logs/index.json records which file is whose."""
    ids = ["../escape", f"{tmp_path}/absolute", "x" * 300, "odd id: é/\\*?", "acme__ledger-101"]
    dataset = _write_jsonl(tmp_path / "data.jsonl", _ledger_rows(swe_data, ids))
    preds = _write_jsonl(tmp_path / "preds.jsonl", [{"instance_id": i, "model_patch": ""} for i in ids])
    before = _files(tmp_path)
    result = _grade(tmp_path, dataset, preds, "--concurrency", "1")
    assert result.exit_code == 0, result.output
    logs = tmp_path / "out" / "logs"
    index = json.loads((logs / "index.json").read_text())
    assert sorted(index) == sorted(ids)
    names = set(index.values())
    assert len(names) == len(ids) and index["acme__ledger-101"] == "acme__ledger-101.log"
    assert {p.name for p in logs.iterdir()} == names | {"index.json"}
    for name in names:
        assert len(name) <= 128 and "/" not in name and not name.startswith(".")
        assert "Start Test Output" in (logs / name).read_text()
    assert _files(tmp_path) == before and not (tmp_path.parent / "escape.log").exists()
    assert sorted(json.loads((tmp_path / "out" / "report.json").read_text())) == sorted(ids)


def test_grading_some_ids_of_a_larger_predictions_file(tmp_path, swe_data):
    """--instance-ids A with predictions for A and B grades A; B is no error."""
    ids = ["acme__ledger-101", "acme__ledger-201"]
    dataset = _write_jsonl(tmp_path / "data.jsonl", _ledger_rows(swe_data, ids))
    preds = _write_jsonl(tmp_path / "preds.jsonl", [{"instance_id": i, "model_patch": ""} for i in ids])
    result = _grade(tmp_path, dataset, preds, "--instance-ids", "acme__ledger-101")
    assert result.exit_code == 0, result.output
    assert "0 of 1 instances resolved" in result.output
    assert list(json.loads((tmp_path / "out" / "report.json").read_text())) == ["acme__ledger-101"]
    result = _grade(tmp_path, dataset, preds, "--instance-ids", "acme__ledger-101,nobody-1")
    assert result.exit_code == 2 and "nobody-1" in result.output and "not in the dataset" in result.output


def _one_error_line(result) -> str:
    """The one `error:` line of a failed command (HF datasets' progress lines aside), and no traceback."""
    lines = [x for x in result.output.strip().splitlines() if "Generating train split" not in x]
    assert result.exit_code == 2 and len(lines) == 1 and lines[0].startswith("error: "), result.output
    assert "Traceback" not in result.output
    return lines[0]


@pytest.mark.parametrize(
    ("name", "content"),
    [
        ("latin1.jsonl", b'{"instance_id": "acme__ledger-101", "model_patch": "caf\xe9"}\n'),
        ("rows.json", b"[1, 2]\n"),
        ("keyed.json", b'{"acme__ledger-101": "not an object"}\n'),
        ("list-id.jsonl", b'{"instance_id": ["a"], "model_patch": ""}\n'),
        ("scalar.jsonl", b'"just a string"\n'),
    ],
)
def test_malformed_predictions_are_one_error_line(tmp_path, case, name, content):
    dataset, _ = case
    (tmp_path / name).write_bytes(content)
    line = _one_error_line(_grade(tmp_path, dataset, tmp_path / name))
    assert name in line


def test_a_dataset_or_instances_file_that_is_not_utf8_is_one_error_line(tmp_path, case):
    dataset, _ = case
    bad = tmp_path / "bad.jsonl"
    bad.write_bytes(b'{"instance_id": "caf\xe9"}\n')
    preds = _predict(tmp_path, "")
    assert "bad.jsonl: not UTF-8" in _one_error_line(_grade(tmp_path, bad, preds))
    runner = CliRunner()
    for flag in ("--instances", "--report", "--splits"):
        args = ["swe", "tasks", "--out", str(tmp_path / "t.jsonl"), "--dataset", str(dataset), flag, str(bad)]
        if flag == "--instances":
            args = ["swe", "tasks", "--out", str(tmp_path / "t.jsonl"), "--instances", str(bad)]
        line = _one_error_line(runner.invoke(app, args))
        assert "bad.jsonl" in line
    args = ["tasks", "validate", "--tasks", str(bad), "--out", str(tmp_path / "v.jsonl"), "--sandbox", "local"]
    tasks = _one_error_line(runner.invoke(app, args))
    assert "bad.jsonl" in tasks and "UTF-8" in tasks


@pytest.mark.parametrize(
    ("patch", "why"),
    [("diff --git a/x b/x\n+\ud800\n", "UTF-8"), (42, "not text"), ({"diff": "x"}, "not text")],
    ids=["lone-surrogate", "number", "object"],
)
def test_a_malformed_patch_is_the_predictions_error(tmp_path, case, patch, why):
    dataset, _ = case
    result = _grade(tmp_path, dataset, _predict(tmp_path, patch))
    assert result.exit_code == 0, result.output
    assert "acme__ledger-101: the patch" in result.output and why in result.output
    assert "environment" not in result.output


@pytest.mark.timeout(300)
def test_clones_of_a_killed_grade_are_removed_by_the_next_run(tmp_path, swe_data, case):
    """kill -9 mid-grade leaves its clone of the repository; the next terminus command removes it."""
    dataset, _ = case
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    env = {k: v for k, v in os.environ.items() if k != "TERMINUS_DEBUG"} | {"TMPDIR": str(tmp)}
    slow = new_file("conftest.py", "import time\n\n\ndef pytest_configure(config):\n    time.sleep(60)\n")
    preds = _predict(tmp_path, slow)
    out = tmp_path / "out" / "report.json"
    command = [TERMINUS, "swe", "grade", "--dataset", str(dataset), "--predictions", str(preds)]
    command += ["--sandbox", BACKEND, "--out", str(out)]
    # Ready once the patch is applied in the workspace: the tests (and their 60 s sleep) are running.
    pid = kill_when(command, lambda: any(tmp.glob("terminus-run-*/ws-*/workspace/conftest.py")), env)
    left = list(tmp.glob(f"{tmproot.PREFIX}{pid}-*/terminus-swe-*"))
    assert left, f"the killed grade had a clone under its run root: {list(tmp.rglob('*'))[:20]}"
    assert not list(tmp.glob("terminus-swe-*")), "a clone outside the run root is not swept"
    (tmp_path / "empty").mkdir()
    done = subprocess.run(
        [TERMINUS, "run", "--sandbox", "local", "--repo", str(tmp_path / "empty"), "true"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert not any(p.exists() for p in left) and not list(tmp.iterdir())


def test_patch_from_tree_runs_nothing_the_tree_planted(tmp_path, swe_data):
    """A main agent's tree whose .git/config names an fsmonitor, a clean filter, a textconv and an external diff
    (with a .gitattributes that selects them): reading its edits runs none of them on the host."""
    root, _ = swe_data
    inst = load_instances("swe-rebench-v2", dataset=str(root / "rebench-v2.jsonl"))[0]
    tree = tmp_path / "tree"
    git("clone", "-q", str(root / "git" / "slugify"), str(tree), cwd=tmp_path)
    git("apply", str(DATA / "repos" / "slugify" / "gold.patch"), cwd=tree)
    marker = tmp_path / "ran"
    script = tmp_path / "planted.sh"
    script.write_text(f'#!/bin/sh\necho "$0 $*" >> {marker}\ncat "$@" 2>/dev/null\nexit 0\n')
    script.chmod(0o755)
    planted = {
        "core.fsmonitor": str(script),
        "filter.evil.clean": str(script),
        "filter.evil.process": str(script),
        "diff.evil.textconv": str(script),
        "diff.external": str(script),
        "core.pager": str(script),
    }
    for key, value in planted.items():
        git("config", "-f", str(tree / ".git" / "config"), key, value, cwd=tmp_path)
    (tree / ".gitattributes").write_text("* filter=evil diff=evil\n")
    (tree / ".git" / "info").mkdir(exist_ok=True)
    (tree / ".git" / "info" / "attributes").write_text("* filter=evil diff=evil\n")
    config_before = (tree / ".git" / "config").read_bytes()
    patch = patch_from_tree(tree, inst.base_commit)
    assert not marker.exists(), marker.read_text()
    assert "b/src/slug.js" in patch and "b/.gitattributes" in patch and ".git/" not in patch.replace(".gitattr", "")
    assert (tree / ".git" / "config").read_bytes() == config_before
    assert grade_patch(inst, patch, SandboxSpec("local")).resolved
    (tree / ".git").rename(tmp_path / "moved.git")
    (tree / ".git").symlink_to(tmp_path / "moved.git")
    with pytest.raises(GradeError, match=r"no \.git folder of its own"):
        patch_from_tree(tree, inst.base_commit)


def test_patch_from_tree_reads_no_repository_a_nested_git_names(tmp_path, swe_data):
    """A nested `.git` file naming a host repository's git folder, or a link to one, made git read that repository
    as a submodule (`Subproject commit <its HEAD>` in the patch): such folders are left out of the patch."""
    root, _ = swe_data
    inst = load_instances("swe-rebench-v2", dataset=str(root / "rebench-v2.jsonl"))[0]
    host_repo = tmp_path / "host-repo"
    git("init", "-q", str(host_repo), cwd=tmp_path)
    (host_repo / "f").write_text("host\n")
    git("add", "f", cwd=host_repo)
    git("commit", "-qm", "host", cwd=host_repo)
    head = git("rev-parse", "HEAD", cwd=host_repo).strip()
    tree = tmp_path / "tree"
    git("clone", "-q", str(root / "git" / "slugify"), str(tree), cwd=tmp_path)
    git("apply", str(DATA / "repos" / "slugify" / "gold.patch"), cwd=tree)
    (tree / "sub").mkdir()
    (tree / "sub" / ".git").write_text(f"gitdir: {host_repo / '.git'}\n")
    (tree / "sub2").mkdir()
    (tree / "sub2" / ".git").symlink_to(host_repo / ".git")
    patch = patch_from_tree(tree, inst.base_commit)
    assert head not in patch and "Subproject" not in patch
    assert "b/src/slug.js" in patch


def test_patch_from_sandbox_runs_no_hook_and_follows_no_link(tmp_path, swe_data, case):
    """The agent's sandbox plants an fsmonitor in .git/config, and a `git` early on its PATH that swaps the diff
    file for a link to a host secret once the diff is written: the fsmonitor never runs, and the host refuses the
    link instead of reading the secret."""
    _, secret = case
    root, _ = swe_data
    inst = load_instances("swe-rebench-v2", dataset=str(root / "rebench-v2.jsonl"))[0]
    # The eval's agent sandbox: limits without the grader's git environment, so only the `git -c ...` flags hold.
    with instance_sandbox(inst, SandboxSpec(BACKEND), Limits(), for_agent=True) as (box, workdir):
        fsmonitor = '#!/bin/sh\ntouch "$TMPDIR/fsmonitor-ran"\n'
        wrapper = (
            '#!/bin/sh\n"$REAL_GIT" "$@"\nstatus=$?\n'
            f'case "$*" in *diff*) ln -sfn {secret} "$TMPDIR/terminus-agent.diff" ;; esac\nexit $status\n'
        )
        plant = (
            f"cd {workdir} && mkdir -p $TMPDIR/bin && printf %s {shlex.quote(fsmonitor)} > $TMPDIR/fsm.sh && "
            f"printf %s {shlex.quote(wrapper)} > $TMPDIR/bin/git && chmod +x $TMPDIR/fsm.sh $TMPDIR/bin/git && "
            "git config core.fsmonitor $TMPDIR/fsm.sh && echo edited >> README.md && "
            'export REAL_GIT="$(command -v git)" PATH="$TMPDIR/bin:$PATH"'
        )
        assert box.run(plant, 30).exit_code == 0
        with pytest.raises(GradeError, match=r"refused.*symbolic link") as err:
            patch_from_sandbox(box, inst, workdir)
        assert SECRET not in str(err.value)
        assert box.run("test -e $TMPDIR/fsmonitor-ran", 30).exit_code != 0, "the planted fsmonitor ran"
        assert box.run('export PATH="${PATH#$TMPDIR/bin:}"', 30).exit_code == 0
        patch = patch_from_sandbox(box, inst, workdir)
        assert "+edited" in patch and SECRET not in patch
        assert box.run("test -e $TMPDIR/fsmonitor-ran", 30).exit_code != 0, "the planted fsmonitor ran"
    assert secret.read_text() == SECRET + "\n"


def _grading_setup(request, name: str):
    """(spec, limits) of a grading setup: bwrap (or local) with the grader's limits, or docker over the host
    image."""
    if name == "docker":
        from .test_grade import _docker

        return _docker(request.getfixturevalue("docker_engine"))
    return SandboxSpec(BACKEND), None


SETUPS = [BACKEND, pytest.param("docker", marks=pytest.mark.docker)]


@pytest.mark.parametrize("setup", SETUPS)
def test_git_in_a_graded_workspace_runs_no_hook(request, swe_data, setup):
    """Hooks and an fsmonitor already in the workspace's .git/ (what a patch can no longer plant, but an image or
    a tool run might): applying the patch, the test setup's checkout and the test run fire none of them."""
    spec, limits = _grading_setup(request, setup)
    root, _ = swe_data
    inst = load_instances("swebench-verified", dataset=str(root / "verified.jsonl"))[0]
    with instance_sandbox(inst, spec, limits) as (box, workdir):
        hook = base64.b64encode(b'#!/bin/sh\necho "$0 $*" >> "$TMPDIR/hook-ran"\n').decode()
        plant = (
            f"cd {workdir} && for h in post-checkout pre-commit post-index-change reference-transaction; do "
            f"printf %s {hook} | base64 -d > .git/hooks/$h && chmod +x .git/hooks/$h; done && "
            "git config core.fsmonitor .git/hooks/post-checkout && "
            "(unset GIT_CONFIG_COUNT; git -c 'safe.directory=*' checkout -q -- README.md) && "
            'test -e "$TMPDIR/hook-ran" && rm "$TMPDIR/hook-ran"'
        )
        planted = box.run(plant, 60)
        assert planted.exit_code == 0, planted.output  # the hooks do fire for a plain git
        result = grade_in_sandbox(box, inst, workdir, inst.gold_patch, 600)
        assert result.resolved, (result.error, result.log[-2000:])
        ran = box.run('cat "$TMPDIR/hook-ran"', 30)
        assert ran.exit_code != 0, f"a planted hook ran during grading: {ran.output}"


@pytest.mark.parametrize("setup", SETUPS)
def test_a_planted_log_link_is_refused_on_every_backend(request, swe_data, case, setup):
    spec, limits = _grading_setup(request, setup)
    _, secret = case
    root, _ = swe_data
    inst = load_instances("swebench-verified", dataset=str(root / "verified.jsonl"))[0]
    conftest = (
        "import os\n\n\ndef pytest_unconfigure(config):\n"
        "    log = os.path.join(os.environ.get('TMPDIR') or '/tmp', 'terminus-swe-test.log')\n"
        f"    os.unlink(log)\n    os.symlink({str(secret)!r}, log)\n"
    )
    result = grade_patch(inst, inst.gold_patch + new_file("conftest.py", conftest), spec, limits=limits)
    assert "the test log was refused" in result.log and "symbolic link" in result.log
    assert SECRET not in result.log and not result.resolved
    # Nothing was parsed, so the record says why, with the log's end: the refusal, never the secret.
    assert result.error.startswith("no test result in the log") and "the test log was refused" in result.error
    assert SECRET not in result.error
