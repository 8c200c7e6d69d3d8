"""benchmarks.grounding --instantiation: ours against the translator's own instantiation, in fresh processes,
with a digest that tells the same task from another; one-line errors on bad pairs."""

import pathlib
import subprocess
import sys

from tests.launching import one_error_line

REPO = pathlib.Path(__file__).resolve().parents[2]


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "benchmarks.grounding", *args], capture_output=True, text=True, cwd=REPO
    )


def test_both_instantiations_of_a_bundled_problem_are_timed_and_the_same_task(data_root):
    domain = data_root / "domains/logistics/domain.pddl"
    problem = sorted((data_root / "domains/logistics").glob("*/*.pddl"))[0]
    proc = run(f"--instantiation={domain}:{problem}")
    assert proc.returncode == 0, proc.stderr[-2000:]
    row = next(line for line in proc.stdout.splitlines() if line.startswith(f"| {problem} |"))
    cells = [cell.strip() for cell in row.strip("|").split("|")]
    assert int(cells[1]) > 0 and cells[-1] == "yes"
    assert all(len(cells[i].split(" / ")) == 2 for i in (2, 3))  # two alternating runs of each


def test_a_pair_that_is_not_two_files_is_one_line_and_exit_2(tmp_path):
    one_error_line(run(f"--instantiation={tmp_path / 'domain.pddl'}"), "error: --instantiation")
