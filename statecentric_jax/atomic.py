"""Atomic file writes, torn-tail-safe appends and per-directory locks.

Readers, and a rerun after kill -9, see the old file or the new one. Append-only
files (`results.jsonl`, logs) may end in a torn line after a crash: `open_append`
drops it before appending. `exclusive` holds `<dir>/.lock` (containing the
owner's PID) with fcntl.flock, which the kernel releases when the owner dies, so
a lock left by a killed process is never stale.
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


def replace_atomically(path: str | os.PathLike, write: Callable[[pathlib.Path], None]) -> None:
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


def drop_torn_tail(path: str | os.PathLike) -> None:
    """Cut an incomplete last line (a write killed midway) so the next append starts a fresh line."""
    path = pathlib.Path(path)
    if not path.is_file():
        return
    with open(path, "rb+") as f:
        size = f.seek(0, os.SEEK_END)
        if size == 0:
            return
        f.seek(size - 1)
        if f.read(1) == b"\n":
            return
        block = 1 << 16
        end = size
        while end > 0:  # find the last newline, scanning back in blocks
            start = max(0, end - block)
            f.seek(start)
            newline = f.read(end - start).rfind(b"\n")
            if newline >= 0:
                f.truncate(start + newline + 1)
                return
            end = start
        f.truncate(0)


@contextlib.contextmanager
def open_append(path: str | os.PathLike) -> Iterator[IO[str]]:
    """Open an append-only text file for appending whole lines, after dropping a torn tail."""
    drop_torn_tail(path)
    with open(path, "a", encoding="utf-8") as f:
        yield f


@contextlib.contextmanager
def exclusive(directory: str | os.PathLike, what: str = "another process") -> Iterator[None]:
    """Hold `<directory>/.lock`; a second holder is refused with one line naming the owner's PID."""
    directory = pathlib.Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / ".lock"
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            owner = os.pread(fd, 32, 0).decode(errors="replace").strip() or "?"
            raise InputError(directory, f"in use by {what} (PID {owner}); wait for it or stop it") from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        yield
    finally:
        os.close(fd)  # closing releases the flock
