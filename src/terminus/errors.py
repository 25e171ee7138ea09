"""The project's own error type and the debug switch. (No room's code: every room may use it.)

`TerminusError` marks a failure the user can act on (a missing file, a bad key, an endpoint that is down): the
CLI prints it as one `error: ...` line naming the file, key or endpoint and the fix. Anything else is a bug and
keeps its traceback. `--debug` or TERMINUS_DEBUG=1 shows tracebacks for our errors too.
"""

from __future__ import annotations

import os

_debug_flag = False


class TerminusError(Exception):
    """A failure with a one-line explanation for the user; its message names what is wrong and the fix."""


def set_debug(value: bool) -> None:
    global _debug_flag
    _debug_flag = bool(value)


def debug_enabled() -> bool:
    return _debug_flag or os.environ.get("TERMINUS_DEBUG", "") not in ("", "0")
