"""Atomic file writes: readers, and a rerun after kill -9, see the old file or the new one.

A write that fails (a full disk, a read-only location, a file where a folder should be) is one
InputError naming the file, and leaves no partial file behind; `check_writable` refuses such a
location before the work starts. Files the project wrote itself are read back with `read_own_text`:
one that is absent, unreadable or garbage (binary or not) is treated as absent and made again.

Append-only JSON-lines files are opened with `open_for_append`, which first drops a torn
last line (a process killed mid-write), so the next record never lands on a fragment.
An `exclusive_lock` keeps a second writer out of a directory; the OS releases it when
its holder dies, so a killed run leaves no stale lock behind.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import pathlib
import threading
from collections.abc import Callable, Iterator
from typing import IO, Any

from statecentric_jax.errors import InputError, from_os_error


def check_writable(folder: str | os.PathLike) -> None:
    """Refuse, before any work, a folder that cannot be made or written: a file in its place or above it,
    or a read-only location."""
    folder = pathlib.Path(os.path.abspath(folder))
    for existing in (folder, *folder.parents):
        if not existing.exists():
            continue
        if not existing.is_dir():
            raise InputError(existing, "is a file, not a folder" + ("" if existing == folder else f" (for {folder})"))
        if not os.access(existing, os.W_OK | os.X_OK):
            raise InputError(existing, "not writable (a read-only location, or no permission)")
        return


def replace_atomically(path: str | os.PathLike, write: Callable[[pathlib.Path], object]) -> None:
    """`write` a temporary sibling of `path`, then rename it over `path`; a failure names `path`."""
    path = pathlib.Path(path)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    try:
        write(tmp)
        os.replace(tmp, path)
    except OSError as e:
        raise from_os_error(e, path, "write") from None
    finally:
        with contextlib.suppress(OSError):
            tmp.unlink(missing_ok=True)


def read_own_text(path: str | os.PathLike) -> str | None:
    """A file this project wrote, or None if it is absent, unreadable or not text (then it is made again)."""
    try:
        return pathlib.Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None


def read_own_json(path: str | os.PathLike) -> Any:
    """A JSON file this project wrote, or None if it is absent, unreadable or garbage."""
    text = read_own_text(path)
    try:
        return None if text is None else json.loads(text)
    except ValueError:
        return None


def read_own_lines(path: str | os.PathLike) -> list[Any]:
    """The JSON values of a JSON-lines file this project wrote; torn or garbage lines are left out."""
    try:
        lines = pathlib.Path(path).read_bytes().splitlines()
    except OSError:
        return []
    values = []
    for line in lines:
        try:
            values.append(json.loads(line.decode("utf-8")))
        except ValueError:  # UnicodeDecodeError is one
            continue
    return values


def write_text(path: str | os.PathLike, text: str) -> None:
    """Write `text` atomically; an unchanged file (and its timestamp) is left as it is."""
    if read_own_text(path) != text:
        replace_atomically(path, lambda tmp: tmp.write_text(text, encoding="utf-8"))


@contextlib.contextmanager
def open_for_append(path: str | os.PathLike) -> Iterator[IO[str]]:
    """A JSON-lines file open for appending, after cutting an incomplete last line; a failed write
    (a full disk) names the file, and the line it tore is cut by the next run."""
    path = pathlib.Path(path)
    try:
        if path.exists():
            with open(path, "rb+") as f:
                data = f.read()
                if data and not data.endswith(b"\n"):
                    f.truncate(data.rfind(b"\n") + 1)
        with open(path, "a", encoding="utf-8") as f:
            yield f
    except OSError as e:
        raise (from_os_error(e, path, "write") if e.filename is None else from_os_error(e)) from None


@contextlib.contextmanager
def exclusive_lock(directory: str | os.PathLike, what: str) -> Iterator[None]:
    """Hold `<directory>/.lock` for the duration; a second holder gets one clear InputError."""
    path = pathlib.Path(directory) / ".lock"
    path.parent.mkdir(parents=True, exist_ok=True)
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
