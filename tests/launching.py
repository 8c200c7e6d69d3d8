"""Run a launch script as a user does, check the one-line error contract, and make a location full or
read-only (a small tmpfs)."""

import contextlib
import pathlib
import subprocess
import sys
from collections.abc import Callable, Iterator

import pytest

REPO = pathlib.Path(__file__).resolve().parents[1]


def launch(script: str, *args: str, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(REPO / "launch" / script), *args], capture_output=True, text=True, cwd=REPO, **kwargs
    )


def one_error_line(proc: subprocess.CompletedProcess, start: str) -> None:
    """Exit code 2, no traceback, and exactly one short `error:` line, starting with `start`."""
    lines = [line for line in proc.stderr.splitlines() if line.startswith("error:")]
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr, proc.stderr[-2000:]
    assert len(lines) == 1 and lines[0].startswith(start) and len(lines[0]) < 300, proc.stderr[-2000:]


@contextlib.contextmanager
def mounted_tmpfs(path: pathlib.Path, options: str) -> Iterator[Callable[[str], None]]:
    """A tmpfs mounted on `path` with `options` ("size=4k", "ro"); yields what remounts it with other options.
    Skips the test where mounting is not allowed."""
    path.mkdir(parents=True, exist_ok=True)
    if subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(path)], capture_output=True).returncode:
        pytest.skip("mounting a small file system needs the right to mount")
    try:
        yield lambda new: subprocess.run(["mount", "-o", f"remount,{new}", str(path)], check=True)
    finally:
        subprocess.run(["umount", str(path)], check=True)
