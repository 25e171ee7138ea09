"""What an episode's commands tell: which commands read git history beyond the base commit, and how often the main
agent reran what its subagent had just run. The per-arm table is `terminus.eval.summary`."""

from __future__ import annotations

import re
import shlex

_FULL_LOG = re.compile(r"\s+\(full log kept in the sandbox, filtered\)$")
_REDIRECT = re.compile(r"\d*>>?\s*(&\d+|\S+)")


def command_signatures(command: str) -> set[str]:
    """What a command runs, for telling a rerun: each step's program and first argument (three words for
    `python -m X`), without `cd`, redirections, pipes into filters or the version in `python3`."""
    command = _FULL_LOG.sub("", command.strip())
    out = set()
    for step in re.split(r"&&|\|\||;", command):
        step = _REDIRECT.sub(" ", step.split("|", 1)[0]).strip().strip("()").strip()
        try:
            words = shlex.split(step)
        except ValueError:
            words = step.split()
        if not words or words[0] in ("cd", "export", "echo", "true", "exit"):
            continue
        program = re.sub(r"[\d.]+$", "", words[0].rsplit("/", 1)[-1])
        keep = 3 if len(words) > 2 and words[1] == "-m" else 2
        out.add(" ".join([program, *words[1:keep]]))
    return out


# git's options before its subcommand that take the next word as their value
_GIT_VALUED = {"-c", "-C", "--git-dir", "--work-tree", "--namespace", "--exec-path", "--config-env"}
_WRAPPERS = {"sudo", "env", "command", "time", "nohup", "nice", "xargs", "timeout", "stdbuf"}
_SHELLS = {"bash", "sh", "zsh", "dash"}
_ALL_REFS = {"--all", "--branches", "--tags", "--remotes", "--reflog", "--glob", "-g", "--walk-reflogs"}
_HASH = re.compile(r"^[0-9a-fA-F]{7,64}([~^:@].*)?$")
_SEPARATORS = set("();<>|&\n")


def _reads_history(words: list[str]) -> bool:
    """One command's words: a git invocation that reads beyond the commit checked out (other refs, the reflog, a
    pickaxe search, an object by its hash)."""
    while words and (words[0] in _WRAPPERS or ("=" in words[0] and not words[0].startswith("-"))):
        words = words[1:]  # `env X=1 git ...`, `sudo git ...`, `GIT_PAGER=cat git ...`
    if not words:
        return False
    program = words[0].rsplit("/", 1)[-1]
    if program in _SHELLS and "-c" in words[1:-1]:
        return history_reads(words[words.index("-c") + 1]) > 0
    if program != "git":
        return False
    rest = words[1:]
    while rest and rest[0].startswith("-"):
        rest = rest[2:] if rest[0] in _GIT_VALUED else rest[1:]
    if not rest:
        return False
    sub, args = rest[0], rest[1:]
    if sub in ("reflog", "cat-file"):
        return True
    if sub == "log":
        return any(a.split("=")[0] in _ALL_REFS or a.startswith(("-S", "-G", "--pickaxe")) for a in args)
    if sub == "rev-list":
        return any(a.split("=")[0] in _ALL_REFS for a in args)
    if sub == "show":
        return any(_HASH.match(a) or a.split("=")[0] in _ALL_REFS for a in args)
    return False


def history_reads(command: str) -> int:
    """1 when a shell command reads git history beyond the base commit (`git log --all`, `git log -S`/`-G`,
    `git show <hash>`, `git reflog`, `git rev-list --all`, `git cat-file`), in any step of a pipeline or list,
    a `$(...)` or inside `bash -c`; else 0. A task's environment holds the base commit alone, so these find nothing
    there: the count says how often an agent looked for the fix in the history."""
    try:  # quotes kept whole (`bash -c "git log --all | head"`); `|`, `&&`, `;`, `(` and newlines end a step
        text = command.replace("`", " ; ").replace("\n", " ; ")
        lexer = shlex.shlex(text, posix=True, punctuation_chars=True)
        lexer.whitespace_split = True
        tokens = list(lexer)
    except ValueError:
        tokens = command.split()
    step: list[str] = []
    for token in [*tokens, ";"]:
        if token and set(token) <= _SEPARATORS:
            if _reads_history(step):
                return 1
            step = []
        else:
            step.append(token)
    return 0


def history_commands(*command_lists: list[str]) -> int:
    """How many of the commands read git history beyond the base commit (`history_reads`)."""
    return sum(history_reads(c) for commands in command_lists for c in commands)


def rerun_rate(subagent_episodes: list[dict], direct_commands: list[dict]) -> float | None:
    """The share of subagent calls that ran a command after whose answer (before the next call) the main agent ran
    itself a command the subagent had already run; None without such calls. A call that ran nothing has nothing to
    rerun: the main agent's own terminal after it is a fallback (eval.usable.fallback_rate), not a rerun, and it is
    left out of the denominator (issue 45). `direct_commands` are `{command, after}`, `after` counting the subagent
    calls made before the command."""
    reran = ran_any = 0
    for i, episode in enumerate(subagent_episodes, 1):
        commands = [c for c in episode.get("commands") or [] if c]
        if not commands:
            continue
        ran_any += 1
        ran = set().union(*(command_signatures(c) for c in commands))
        later = [d["command"] for d in direct_commands if d["after"] == i]
        reran += any(command_signatures(c) & ran for c in later)
    return reran / ran_any if ran_any else None
