"""Run a launch script as a user does, and check the one-line error contract."""

import pathlib
import subprocess
import sys

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
