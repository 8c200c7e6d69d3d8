"""`benchmarks.decode_run` times a run against the paper's beam, also a run chosen with settings that only
best-first search takes."""

import json
import subprocess
import sys

from tests.conftest import REPO


def test_a_run_with_best_first_only_settings_is_timed_beside_the_papers_beam(tiny_run_copy, blocks_root):
    config = json.loads((tiny_run_copy / "config.json").read_text())
    config["decode"].update(strategy="best_first", prune_dead_ends=True)
    (tiny_run_copy / "config.json").write_text(json.dumps(config))
    command = [sys.executable, "-m", "benchmarks.decode_run", f"--run={tiny_run_copy}", f"--pddl_root={blocks_root}"]
    done = subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    rows = [line.split(" | ")[0] for line in done.stdout.splitlines() if line.startswith("| ") and "/" in line]
    assert rows == ["| beam (paper)", "| the run with the flags"]
