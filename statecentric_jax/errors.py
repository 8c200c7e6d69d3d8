"""The one error type users see: a single line naming the file and the problem."""

from __future__ import annotations

import os


class InputError(Exception):
    """Bad user input (PDDL, plan, checkpoint, config): reported as `path: reason`."""

    exit_code = 2  # bad input; a subclass for "ran fine, no result" uses 1

    def __init__(self, path: str | os.PathLike | None, reason: str):
        self.path = None if path is None else os.fspath(path)
        self.reason = " ".join(str(reason).split())  # always one line
        super().__init__(self.reason if self.path is None else f"{self.path}: {self.reason}")
