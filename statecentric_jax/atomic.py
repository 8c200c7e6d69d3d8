"""Atomic file writes: readers, and a rerun after kill -9, see the old file or the new one."""

from __future__ import annotations

import os
import pathlib
import threading
from collections.abc import Callable


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
