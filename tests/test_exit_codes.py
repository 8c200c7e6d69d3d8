"""The exit-code table of docs/usage.md is true: every launch script is in it, and its cheap failing cases exit 2
with one `error:` line (the cases that need a trained run are in tests/method)."""

import pathlib
import re
import subprocess
import sys

import pytest

REPO = pathlib.Path(__file__).resolve().parents[1]
SCRIPTS = sorted(p.name for p in (REPO / "launch").glob("*.py") if p.name != "__init__.py")
CONFIG = f"--config={REPO}/configs/blocks_wl_xgb_delta.py"

NOT_PYTHON = f"--config={REPO}/pyproject.toml"  # a config file that does not load
A_FILE = f"{REPO}/pyproject.toml"  # a file where an output folder should be

CASES = {
    "generate_problems.py": [["--seed=abc"], [f"--out_root={A_FILE}"]],
    "generate_plans.py": [
        ["--jobs=-1"],
        ["--pddl_root=/no/such/root", "--domains=blocks"],
        ["--domains=foo"],
        [f"--workdir={A_FILE}"],
    ],
    "build_dataset.py": [["--pddl_root=/no/such/root"], ["--plans_dir=/x", f"--out_dir={A_FILE}"]],
    "train.py": [
        [CONFIG, "--config.lstm.epoch=3", "--workdir=/tmp/x"],
        ["--config=/no/such.py", "--workdir=/tmp/x"],
        [NOT_PYTHON, "--workdir=/tmp/x"],
        [f"--config={REPO}/configs/recommended.py", "--workdir=/tmp/x"],  # no --config.data.domain
    ],
    "evaluate.py": [
        ["--workdir=/no/such/run"],
        ["--workdir=/tmp/x", "--beam_width=0"],
        ["--max_in_flight=0"],
        ["--workdir=/tmp/x", "--jobs=0"],
    ],
    "plan.py": [
        ["--workdir=/no/such/run", "--domain=d.pddl", "--problem=p.pddl", "--out=/no/such/dir/plan.txt"],
        ["--workdir=/no/such\nrun", "--domain=d.pddl", "--problem=p.pddl"],  # a newline in a file name
        [f"--workdir=/no/{'long-folder-name/' * 25}run", "--domain=d.pddl", "--problem=p.pddl"],  # 432 characters
    ],
    "run_experiment.py": [
        [CONFIG, "--workdir=/tmp/x", "--seeds=abc"],
        [CONFIG, "--workdir=/tmp/x", "--seeds="],
        [CONFIG, "--workdir=/tmp/x", "--config.xgb.rounds=0"],
    ],
    "sweep.py": [["--sweep_dir=/tmp/x", "--parallel=0"], [f"--sweep_dir={A_FILE}"]],
    "report.py": [["--sweep_dir=/no/such/sweep"], ["--sweep_dir=/tmp/x", f"--out_dir={A_FILE}"]],
    "ipc.py": [
        ["--root=/no/such/root", "--time_limit=10", "--workdir=/tmp/x"],
        [f"--root={REPO}/data/domains", "--time_limit=0", "--workdir=/tmp/x"],
        [f"--root={REPO}/data/domains", "--time_limit=10", "--problems=every=x", "--workdir=/tmp/x"],
        [f"--root={REPO}/data/domains", "--time_limit=10", "--training_memory_limit_mb=0", "--workdir=/tmp/x"],
    ],
}


def exit_code_table() -> dict[str, list[str]]:
    text = (REPO / "docs" / "usage.md").read_text()
    block = re.search(r"^\s*\| script \| 0 \| 1 \| 2 \|\n((?:\s*\|.*\n)+)", text, re.M)
    assert block, "no exit-code table in docs/usage.md"
    rows = re.findall(r"^\s*\| `(\w+\.py)` \|(.*)\|\s*$", block.group(1), re.M)
    return {name: [cell.strip() for cell in cells.split("|")] for name, cells in rows}


def test_every_launch_script_is_in_the_table():
    table = exit_code_table()
    assert sorted(table) == SCRIPTS == sorted(CASES)
    assert all(len(cells) == 3 and cells[2] != "—" for cells in table.values())


@pytest.mark.parametrize("script,args", [(s, a) for s, cases in CASES.items() for a in cases])
def test_cheap_failures_exit_2_with_one_line(script, args):
    proc = subprocess.run(
        [sys.executable, str(REPO / "launch" / script), *args], capture_output=True, text=True, cwd=REPO
    )
    errors = [line for line in proc.stderr.splitlines() if line.startswith("error:")]
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr and len(errors) == 1 and len(errors[0]) < 300, proc.stderr[-2000:]
    assert proc.stderr.splitlines()[-1] == errors[0], proc.stderr[-2000:]  # the error is the last line, whole
