"""Bad command lines end with one `error:` line and exit code 2, before any work."""

import pathlib
import subprocess
import sys

import pytest

from statecentric_jax.cli import parse_floats, parse_ints
from statecentric_jax.errors import InputError

REPO = pathlib.Path(__file__).resolve().parents[1]
CONFIG = "--config=configs/blocks_wl_xgb_delta.py"


@pytest.mark.parametrize(
    "args, names",
    [
        ([CONFIG, "--config.lstm.epoch=3"], "--config.lstm.epoch"),  # misspelt key, with absl's suggestion
        (["--config=configs/missing.py"], "--config"),
        ([CONFIG, "--seeds=abc"], "--seeds"),
        ([CONFIG, "--seeds="], "--seeds: expected integers separated by commas, got nothing"),
        ([CONFIG, "--config.xgb.rounds=0"], "xgb.rounds"),
        ([CONFIG, "--config.xgb.max_depth=-3"], "xgb.max_depth"),
        ([CONFIG, "--config.xgb.n_jobs=abc"], "--config.xgb.n_jobs"),
        ([CONFIG, "--config.decode.beam_width=0"], "beam_width"),
        ([CONFIG, "--config.decode.strategy=dfs"], "unknown decoding strategy"),
    ],
)
def test_bad_experiment_command_lines(tmp_path, args, names):
    proc = subprocess.run(
        [sys.executable, "launch/run_experiment.py", f"--workdir={tmp_path}/run", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
    )
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2 and len(lines[-1]) < 300
    assert lines[-1].startswith("error: ") and names in lines[-1]
    assert "Traceback" not in proc.stderr
    assert not (tmp_path / "run").exists()  # refused before any work


def test_number_list_flags_parse_or_name_the_flag():
    assert parse_ints("seeds", ["13", "14"]) == [13, 14]
    assert parse_floats("value_weights", ["0.5", "2"]) == [0.5, 2.0]
    with pytest.raises(InputError, match="--seeds: expected integers separated by commas, got 13,1.5"):
        parse_ints("seeds", ["13", "1.5"])
    with pytest.raises(InputError, match="--value_weights: expected numbers separated by commas, got x"):
        parse_floats("value_weights", ["x"])


BROKEN_CONFIGS = {
    "syntax.py": ("def get_config(:\n", "SyntaxError: invalid syntax (syntax.py, line 1)"),
    "binary.py": ("\x00\x01\x02", "SyntaxError: source code string cannot contain null bytes"),
    "raises.py": ("def get_config():\n    raise RuntimeError('no data here')\n", "RuntimeError: no data here"),
}


@pytest.mark.parametrize("script", ["train.py", "run_experiment.py"])
@pytest.mark.parametrize("name", sorted(BROKEN_CONFIGS))
def test_a_config_file_that_does_not_load_is_one_line(tmp_path, script, name):
    text, reason = BROKEN_CONFIGS[name]
    (tmp_path / name).write_text(text)
    proc = subprocess.run(
        [sys.executable, f"launch/{script}", f"--config={tmp_path / name}", f"--workdir={tmp_path}/run"],
        cwd=REPO,
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr[-2000:]
    assert proc.stderr.strip().splitlines() == [f"error: {tmp_path / name}: cannot load config ({reason})"]
    assert not (tmp_path / "run").exists()


def test_an_empty_seed_list_is_refused():
    with pytest.raises(InputError, match="--seeds: expected integers separated by commas, got nothing"):
        parse_ints("seeds", [])


def test_an_os_error_the_launcher_did_not_foresee_is_one_line(tmp_path):
    script = (
        "from statecentric_jax.cli import run_main\n"
        f"def main(argv): open({str(tmp_path / 'no' / 'such' / 'x')!r}, 'w')\n"
        "run_main(main)\n"
    )
    proc = subprocess.run([sys.executable, "-c", script], cwd=REPO, capture_output=True, text=True)
    assert proc.returncode == 2 and proc.stderr == f"error: {tmp_path}/no/such/x: No such file or directory\n"


def test_an_interrupted_job_is_one_line_and_exit_130():
    script = "from statecentric_jax.cli import run_main\ndef main(argv): raise KeyboardInterrupt\nrun_main(main)\n"
    proc = subprocess.run([sys.executable, "-c", script], cwd=REPO, capture_output=True, text=True)
    assert proc.returncode == 130 and proc.stderr.startswith("interrupted: ") and proc.stderr.count("\n") == 1
