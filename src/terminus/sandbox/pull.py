"""Docker images pulled on first use: what the `pull` setting (`SandboxSpec.pull`, the config's `sandbox_pull`,
`--pull`) asks for, through the Docker SDK, with progress in the log and retries.

Why here and not left to the engine: `containers.create` of an absent image fails with a bare 404, and the SWE
family's images (one per instance, gigabytes each) are rarely all on a node; without a pull every instance whose
image is missing would be an environment drop. Why retries: a registry under load answers 429s and resets
connections, and one such answer must not cost an episode.

- `missing` (the default): pulled when absent locally, once per process however many episodes start at once.
- `always`: pulled once per process, on its first use, even when present (a moving tag such as `latest`); when that
  pull fails the local copy is used, with a warning.
- `never`: an absent image is an error naming the image and the fix; nothing is pulled (air-gapped nodes).
"""

from __future__ import annotations

import logging
import threading
import time
from enum import StrEnum

from terminus.sandbox.errors import SandboxError

log = logging.getLogger(__name__)

PULL_TRIES = 3  # attempts in all, per image
PULL_BACKOFF_S = 10.0  # wait before the second try; doubled before each further one
RETRY_AFTER_S = 600.0  # a failed pull is not tried again for this long: the episodes that wait on it fail at once
PROGRESS_EVERY_S = 15.0  # at most one progress line per image this often (a pull's stream has one line per chunk)


class Pull(StrEnum):
    """When a docker image is pulled (the config's `sandbox_pull`, `--pull`)."""

    MISSING = "missing"
    ALWAYS = "always"
    NEVER = "never"


class ImagePullError(SandboxError):
    """A docker image is absent and could not be pulled (or may not be: `never`)."""


_locks: dict[str, threading.Lock] = {}
_locks_guard = threading.Lock()
_pulled: set[tuple[str, str]] = set()  # (engine, image) pulled by this process: `always` pulls each once
_failed: dict[tuple[str, str], tuple[float, str]] = {}  # (engine, image) -> when its pull last failed, and why


# What to do when no engine answers: the usual causes, in the order they happen.
DOCKER_HINT = (
    "start the engine (`sudo systemctl start docker`, or Docker Desktop), make sure you may use its socket (the "
    "`docker` group, or rootless Docker's DOCKER_HOST=unix://$XDG_RUNTIME_DIR/docker.sock), or use --sandbox bwrap"
)


def docker_client(base_url: str | None):
    """A client of the engine at `base_url` (None: DOCKER_HOST or the default socket) that answered a ping."""
    try:
        import docker
    except ImportError as err:  # pragma: no cover - docker is a dependency
        raise SandboxError("the docker Python package is missing: pip install docker") from err
    try:
        client = docker.DockerClient(base_url=base_url) if base_url else docker.from_env()
        client.ping()
    except Exception as err:
        raise SandboxError(
            f"cannot reach the Docker engine at {base_url or 'DOCKER_HOST/default socket'}: {one_line(err)}; "
            f"{DOCKER_HINT}"
        ) from err
    return client


def pull_mode(value: str | Pull | None) -> Pull:
    """The mode called `value` (None: `missing`); SandboxError naming the choices for any other."""
    try:
        return Pull(value or Pull.MISSING)
    except ValueError:
        raise SandboxError(f"unknown pull mode {value!r}; choose one of {', '.join(Pull)}") from None


def ensure_image(client, image: str, mode: Pull | str = Pull.MISSING, *, engine: str = "", local_only: bool = False):
    """Make `image` present on `client`'s engine as `mode` asks; returns the SDK's Image. Threads that need the same
    image wait for one pull. `local_only`: an image that no registry holds (the project's own, built locally):
    never pulled, and its absence says how to build it."""
    mode = pull_mode(mode)
    with _locks_guard:
        lock = _locks.setdefault(f"{engine}|{image}", threading.Lock())
    with lock:
        present = _local(client, image)
        if local_only:
            if present is None:
                raise ImagePullError(
                    f"docker image {image!r} is not present locally and no registry has it: build it "
                    "(`docker build -t terminus-sandbox:host docker/sandbox`)"
                )
            return present
        if present is not None and (mode is not Pull.ALWAYS or (engine, image) in _pulled):
            return present
        if present is None and mode is Pull.NEVER:
            raise ImagePullError(
                f"docker image {image!r} is not present locally and pulling is off (sandbox_pull: never / "
                f"--pull never): pull it first (`docker pull {image}`, or `terminus swe pull` for a benchmark's "
                "images) or set sandbox_pull: missing"
            )
        if mode is Pull.NEVER:
            return present
        failed_at, why = _failed.get((engine, image), (None, ""))
        if present is None and failed_at is not None and time.monotonic() - failed_at < RETRY_AFTER_S:
            # A batch of episodes of one task waits here in turn: one set of tries is enough for all of them.
            raise ImagePullError(f"docker image {image!r} is not present locally; {why} (not tried again yet)")
        try:
            pulled = pull_image(client, image)
        except ImagePullError as err:
            _failed[(engine, image)] = (time.monotonic(), str(err))
            if present is None:
                raise ImagePullError(f"docker image {image!r} is not present locally; {err}") from err
            # `always` with the image here: a registry that is down must not fail episodes that can run
            log.warning("%s; using the local copy of %s", err, image)
            pulled = present
        _pulled.add((engine, image))
        return pulled


def _local(client, image: str):
    import docker.errors

    try:
        return client.images.get(image)
    except docker.errors.ImageNotFound:
        return None
    except docker.errors.APIError as err:
        raise SandboxError(f"cannot look up docker image {image!r}: {err}") from err


def pull_image(client, image: str, tries: int = PULL_TRIES):
    """Pull `image` through the SDK (`api.pull`, streamed, as `images.pull` does, so that its progress reaches the
    log), trying `tries` times with a doubling wait; ImagePullError naming the image, the tries and the last
    error when none succeeds."""
    from docker.utils import parse_repository_tag

    repository, tag = parse_repository_tag(image)
    tag = tag or "latest"
    last: Exception | None = None
    for attempt in range(1, tries + 1):
        start = time.monotonic()
        log.info("pulling docker image %s (try %d of %d)", image, attempt, tries)
        try:
            _stream(client.api.pull(repository, tag=tag, stream=True, decode=True), image)
            found = client.images.get(f"{repository}{'@' if tag.startswith('sha256:') else ':'}{tag}")
        except Exception as err:  # the engine's and the registry's errors alike: each try counts
            last = err
            log.warning("the pull of %s failed (try %d of %d): %s", image, attempt, tries, one_line(err))
            if attempt < tries:
                time.sleep(PULL_BACKOFF_S * 2 ** (attempt - 1))
            continue
        log.info("pulled docker image %s in %.0f s", image, time.monotonic() - start)
        return found
    raise ImagePullError(
        f"pulling docker image {image!r} failed after {tries} tries: "
        f"{one_line(last)} (check the node's network and registry access; or pre-pull it, `terminus swe pull`, or "
        "build or `docker load` it)"
    )


def _stream(lines, image: str) -> None:
    """Read a pull's progress stream to its end, logging a line per layer event at most every PROGRESS_EVERY_S; an
    `error` entry (the engine reports a failed pull inside the stream, with status 200) raises."""
    last_note = 0.0
    for line in lines:
        if not isinstance(line, dict):
            continue
        if line.get("error"):
            raise SandboxError(line.get("error"))
        now = time.monotonic()
        if now - last_note >= PROGRESS_EVERY_S and line.get("status"):
            last_note = now
            detail = line.get("progress") or ""
            log.info("pulling %s: %s %s %s", image, line.get("id", ""), line["status"], detail)


def one_line(err: BaseException | None) -> str:
    text = " ".join(str(err).split()) if err is not None else "no error recorded"
    return text[:300]


def pull_images(images: list[str], docker_url: str | None = None, mode: Pull | str = Pull.MISSING) -> dict:
    """Pre-pull `images` on this node's engine (`terminus swe pull`), each once, one after another (the engine
    already fetches a pull's layers in parallel); a failed image does not stop the others. Returns a report:
    {"present": [...], "pulled": [...], "failed": {image: error}}. `mode`: missing pulls the absent ones, always
    every one; never only reports what is absent."""
    mode = pull_mode(mode)
    client = docker_client(docker_url)
    report: dict = {"present": [], "pulled": [], "failed": {}}
    try:
        for image in dict.fromkeys(images):
            was_present = _local(client, image) is not None
            try:
                ensure_image(client, image, mode, engine=docker_url or "")
            except SandboxError as err:
                report["failed"][image] = str(err)
                continue
            report["present" if was_present and mode is not Pull.ALWAYS else "pulled"].append(image)
    finally:
        client.close()
    return report
