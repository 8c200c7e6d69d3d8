"""Atomic file writes: readers, and a rerun after kill -9, see the old file or the new one.

Append-only JSON-lines files are opened with `open_for_append`, which first drops a torn
last line (a process killed mid-write), so the next record never lands on a fragment.
An `exclusive_lock` keeps a second writer out of a directory; the OS releases it when
its holder dies, so a killed run leaves no stale lock behind.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import pathlib
import threading
from collections.abc import Callable, Iterator
from typing import IO

from statecentric_jax.errors import InputError


def replace_atomically(path: str | os.PathLike, write: Callable[[pathlib.Path], object]) -> None:
    """`write` a temporary sibling of `path`, then rename it over `path`."""
    path = pathlib.Path(path)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    try:
        write(tmp)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def write_text(path: str | os.PathLike, text: str) -> None:
    """Write `text` atomically; an unchanged file (and its timestamp) is left as it is."""
    path = pathlib.Path(path)
    if path.is_file() and path.read_text(encoding="utf-8") == text:
        return
    replace_atomically(path, lambda tmp: tmp.write_text(text, encoding="utf-8"))


def open_for_append(path: str | os.PathLike) -> IO[str]:
    """Open a JSON-lines file for appending, after cutting an incomplete last line."""
    path = pathlib.Path(path)
    if path.exists():
        with open(path, "rb+") as f:
            data = f.read()
            if data and not data.endswith(b"\n"):
                f.truncate(data.rfind(b"\n") + 1)
    return open(path, "a", encoding="utf-8")


@contextlib.contextmanager
def exclusive_lock(directory: str | os.PathLike, what: str) -> Iterator[None]:
    """Hold `<directory>/.lock` for the duration; a second holder gets one clear InputError."""
    path = pathlib.Path(directory) / ".lock"
    with open(path, "a+", encoding="utf-8") as f:
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            f.seek(0)
            owner = f.read().strip() or "another process"
            raise InputError(directory, f"{what} is already running here ({owner}); wait for it or stop it") from None
        f.seek(0)
        f.truncate()
        f.write(f"pid {os.getpid()}")
        f.flush()
        try:
            yield
        finally:
            f.seek(0)
            f.truncate()
