"""The one error type users see: a single line naming the file and the problem.

The line stays one line and short whatever the path: control characters in a path (a newline
in a file name) are escaped, and the middle of a long path is elided.
"""

from __future__ import annotations

import errno
import os
import re

MAX_PATH = 160  # characters of a path shown in an error line; the line stays under 300
MAX_LINE = 290


def shown(path: str, limit: int = MAX_PATH) -> str:
    """`path` as an error line shows it: control characters escaped, the middle of a long one elided."""
    path = re.sub(r"[\x00-\x1f\x7f]", lambda m: m[0].encode("unicode_escape").decode("ascii"), path)
    if len(path) <= limit:
        return path
    head = (limit - 3) // 2
    return f"{path[:head]}...{path[len(path) - (limit - 3 - head) :]}"


class InputError(Exception):
    """Bad user input (PDDL, plan, checkpoint, config): reported as `path: reason`."""

    exit_code = 2  # bad input; a subclass for "ran fine, no result" uses 1

    def __init__(self, path: str | os.PathLike | None, reason: str):
        self.path = None if path is None else os.fspath(path)
        self.reason = " ".join(str(reason).split())  # always one line
        where = "" if self.path is None else f"{shown(self.path)}: "
        super().__init__(where + shown(self.reason, MAX_LINE - len("error: ") - len(where)))


def from_os_error(error: OSError, path: str | os.PathLike | None = None, action: str | None = None) -> InputError:
    """A failed read or write as one line naming `path` (default: the file the OS names); `action`, e.g.
    "write", says what failed."""
    where = path if path is not None else error.filename
    reason = error.strerror or str(error) or type(error).__name__
    if action is not None:
        reason = f"cannot {action} ({reason})"
    if error.errno in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG):
        reason += "; free some space and run again: finished work is kept"
    elif error.errno == errno.EROFS:
        reason += "; choose a writable location"
    return InputError(where, reason)
