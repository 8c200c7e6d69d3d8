"""Reliability: resume, locks, torn tails, validation and one-line errors, on a tiny trained XGBoost run."""

import json
import os
import pathlib
import random
import shutil
import signal
import subprocess
import sys
import time

import ml_collections
import pytest

from statecentric_jax import config as config_lib
from statecentric_jax.atomic import exclusive_lock, open_for_append
from statecentric_jax.errors import InputError
from statecentric_jax.method import aggregation, pipeline
from statecentric_jax.method.evaluation import NOT_READ_BY_DECODING, evaluate, run_fingerprint
from statecentric_jax.search.base import decode_config

REPO = pathlib.Path(__file__).resolve().parents[2]
CONFIG = REPO / "configs" / sorted(p.name for p in (REPO / "configs").glob("*.py") if p.name != "__init__.py")[0]


@pytest.fixture
def fresh(tiny_run, tmp_path):
    """A copy of the trained run without evaluations."""
    copy = tmp_path / "run"
    shutil.copytree(tiny_run, copy, ignore=shutil.ignore_patterns("eval"))
    return copy


def launch(script, *args, **kwargs):
    return subprocess.run(
        [sys.executable, str(REPO / "launch" / script), *args], capture_output=True, text=True, cwd=REPO, **kwargs
    )


def one_error_line(proc, start):
    lines = [line for line in proc.stderr.splitlines() if line.startswith("error:")]
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr, proc.stderr[-2000:]
    assert len(lines) == 1 and lines[0].startswith(start) and len(lines[0]) < 300, proc.stderr[-2000:]


def lines_of(workdir, split="test-extrapolation"):
    return (workdir / "eval" / split / "results.jsonl").read_text().splitlines()


def stable(workdir, split="test-extrapolation"):
    return [
        {k: r[k] for k in ("problem_file", "solved", "plan", "outcome")}
        for r in json.loads((workdir / "eval" / split / "results.json").read_text())
    ]


# 1 and 7: settings validated before any work
def test_bad_decode_settings_refused(fresh):
    for kwargs in ({"max_in_flight": 0}, {"beam_width": 0}, {"beam_width": -1}):
        with pytest.raises(InputError, match="at least 1"):
            evaluate(fresh, "test-extrapolation", **kwargs)
    assert not (fresh / "eval" / "test-extrapolation" / "results.jsonl").exists()


@pytest.mark.parametrize(
    "key,value", [("xgb.rounds", 0), ("xgb.max_depth", -3), ("xgb.n_jobs", "x"), ("decode.beam_width", 0)]
)
def test_config_check_refuses(key, value):
    config = ml_collections.ConfigDict(config_lib.base().to_dict(), type_safe=False)  # as read from config.json
    section, name = key.split(".")
    config[section][name] = value
    with pytest.raises(InputError, match=key):
        config_lib.check(config)


def test_config_without_decode_is_refused(fresh):
    config = json.loads((fresh / "config.json").read_text())
    del config["decode"]
    (fresh / "config.json").write_text(json.dumps(config))
    with pytest.raises(InputError, match="config.json"):
        evaluate(fresh, "test-extrapolation")


@pytest.mark.parametrize(
    "args,start",
    [
        (["--config.lstm.epoch=3"], "error: --config.lstm.epoch: no such config key 'epoch'. Did you mean \"epochs\""),
        (["--seeds=abc"], "error: --seeds:"),
        (["--config.xgb.rounds=0"], "error: config xgb.rounds=0 must be an integer >= 1"),
        (["--config.decode.beam_width=0"], "error: decode.beam_width=0 must be at least 1"),
    ],
)
def test_cli_config_errors_are_one_line(args, start, tmp_path):
    one_error_line(launch("run_experiment.py", f"--config={CONFIG}", f"--workdir={tmp_path}", *args), start)
    assert not any(tmp_path.iterdir())  # nothing trained


def test_missing_config_file_is_one_line(tmp_path):
    one_error_line(launch("run_experiment.py", "--config=/no/such.py", f"--workdir={tmp_path}"), "error: --config:")


def test_flag_bounds_are_one_line(fresh, tmp_path):
    one_error_line(
        launch("evaluate.py", f"--workdir={fresh}", "--max_in_flight=0"),
        "error: --max_in_flight: 0 is not a positive integer",
    )
    one_error_line(
        launch("generate_plans.py", "--jobs=-1", f"--workdir={tmp_path}"),
        "error: --jobs: -1 is not a non-negative integer",
    )


# 2: zero-byte checkpoint
def test_zero_byte_xgb_checkpoint_is_one_line(fresh):
    (fresh / "checkpoint" / "model.ubj").write_bytes(b"")
    one_error_line(
        launch("evaluate.py", f"--workdir={fresh}"),
        f"error: {fresh}/checkpoint/model.ubj: corrupt XGBoost model (empty file)",
    )


# 3: torn tail
def test_torn_tail_does_not_swallow_the_next_record(fresh):
    evaluate(fresh, "test-extrapolation")
    lines = lines_of(fresh)
    (fresh / "eval/test-extrapolation/results.jsonl").write_text("\n".join(lines[:-1]) + "\n" + lines[-1][:20])
    evaluate(fresh, "test-extrapolation")
    assert len(lines_of(fresh)) == len(lines)
    assert all(json.loads(line) for line in lines_of(fresh))
    evaluate(fresh, "test-extrapolation")  # nothing left to decode
    assert len(lines_of(fresh)) == len(lines)


def test_kill_9_during_append_leaves_whole_lines(tmp_path):
    path = tmp_path / "log.jsonl"
    writer = (
        "import sys; from statecentric_jax.atomic import open_for_append\n"
        "with open_for_append(sys.argv[1]) as f:\n"
        "    while True: f.write('{\"x\": \"' + 'y' * 100000 + '\"}\\n'); f.flush()\n"
    )
    for _ in range(3):
        proc = subprocess.Popen([sys.executable, "-c", writer, str(path)], cwd=REPO)
        while not path.exists() or path.stat().st_size < 300000:
            time.sleep(0.01)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        with open_for_append(path) as f:
            f.write('{"x": "after"}\n')
        assert all(json.loads(line) for line in path.read_text().splitlines())
    assert path.read_text().count('"after"') == 3


# 4: stale results
def test_other_beam_width_decodes_again(fresh, tmp_path):
    other = tmp_path / "other"
    shutil.copytree(fresh, other)
    evaluate(fresh, "test-extrapolation", beam_width=3)
    summary = evaluate(fresh, "test-extrapolation", beam_width=1)
    assert summary["beam_width"] == 1
    assert stable(fresh) == (evaluate(other, "test-extrapolation", beam_width=1) and stable(other))


def test_retrained_model_decodes_again(fresh):
    evaluate(fresh, "test-extrapolation")
    before = len(lines_of(fresh))
    model = fresh / "checkpoint" / "model.ubj"
    model.write_bytes(model.read_bytes())  # same bytes: same fingerprint
    evaluate(fresh, "test-extrapolation")
    assert len(lines_of(fresh)) == before
    for record in map(json.loads, lines_of(fresh)):
        assert record["fingerprint"]
    old = {json.loads(line)["fingerprint"] for line in lines_of(fresh)}
    (fresh / "checkpoint" / "extra").write_bytes(b"x")  # a changed checkpoint is another model
    evaluate(fresh, "test-extrapolation")
    assert len(lines_of(fresh)) == before  # decoded again; only the current records are kept
    assert not old & {json.loads(line)["fingerprint"] for line in lines_of(fresh)}


def test_the_fingerprint_leaves_out_the_seed_and_training_records_but_not_the_model(fresh, tmp_path):
    assert {aggregation.SUMMARY_FILE, aggregation.AGGREGATION_DIR} <= NOT_READ_BY_DECODING
    settings = decode_config(config_lib.table1("blocks", "wl", "xgb", "delta"))
    other = tmp_path / "other-seed"
    shutil.copytree(fresh, other)
    config = json.loads((other / "config.json").read_text())
    (other / "config.json").write_text(json.dumps({**config, "seed": 14}))
    (other / "metrics.jsonl").write_text("{}\n")
    (other / aggregation.AGGREGATION_DIR).mkdir()
    (other / aggregation.AGGREGATION_DIR / "round1.json").write_text("{}")
    assert run_fingerprint(other, settings) == run_fingerprint(fresh, settings)
    (other / "config.json").write_text(json.dumps({**config, "seed": 14, "other": 1}))  # anything but the seed
    assert run_fingerprint(other, settings) != run_fingerprint(fresh, settings)
    (other / "config.json").write_text(json.dumps({**config, "seed": 14}))
    (other / "checkpoint" / "extra").write_bytes(b"x")  # another model
    assert run_fingerprint(other, settings) != run_fingerprint(fresh, settings)


# 5: resume keys on the resolved path
def test_same_problems_by_another_path_are_not_decoded_twice(fresh, blocks_root, monkeypatch):
    evaluate(fresh, "test-extrapolation", pddl_root=blocks_root)
    monkeypatch.chdir(blocks_root.parent)
    evaluate(fresh, "test-extrapolation", pddl_root=blocks_root.name)
    assert len(lines_of(fresh)) == 4


# 6: lock
def test_second_evaluation_of_a_split_is_refused(fresh):
    with exclusive_lock(fresh / "eval" / "test-extrapolation", "an evaluation"):
        with pytest.raises(InputError, match=f"pid {os.getpid()}"):
            evaluate(fresh, "test-extrapolation")
        proc = launch("evaluate.py", f"--workdir={fresh}")
        one_error_line(proc, f"error: {fresh}/eval/test-extrapolation:")
    evaluate(fresh, "test-extrapolation")  # released


# 7: plan.py --out checked before decoding; 10: exit codes
def test_plan_out_checked_first_and_unsolved_is_exit_1(fresh, blocks_root, tmp_path):
    args = [
        f"--workdir={fresh}",
        f"--domain={blocks_root}/blocks/domain.pddl",
        f"--problem={blocks_root}/blocks/train/b3-0.pddl",
    ]
    one_error_line(launch("plan.py", *args, f"--out={tmp_path}/missing/p.txt"), f"error: {tmp_path}/missing/p.txt:")
    one_error_line(launch("plan.py", *args, f"--out={tmp_path}"), f"error: {tmp_path}: cannot write the plan here")
    proc = launch("plan.py", *args, f"--out={tmp_path}/p.txt", "--config.decode.horizon_base=0")
    assert proc.returncode == 2  # plan.py has no --config; flags errors stay exit 2


def test_bad_domain_is_one_line_for_the_whole_split(fresh, blocks_root, tmp_path):
    bad = tmp_path / "root"
    shutil.copytree(blocks_root, bad)
    (bad / "blocks" / "domain.pddl").write_text("(define (domain blocks)")
    one_error_line(
        launch("evaluate.py", f"--workdir={fresh}", f"--pddl_root={bad}"), f"error: {bad}/blocks/domain.pddl:"
    )


# fault injection: kill evaluation at random points, the final results equal an uninterrupted run
def test_killed_evaluations_resume_to_the_uninterrupted_result(fresh, tmp_path):
    reference = tmp_path / "reference"
    shutil.copytree(fresh, reference)
    evaluate(reference, "test-extrapolation")
    rng = random.Random(0)
    command = [sys.executable, str(REPO / "launch" / "evaluate.py"), f"--workdir={fresh}"]
    for _ in range(2):
        proc = subprocess.Popen(command, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(rng.uniform(1.0, 6.0))
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    assert subprocess.run(command, cwd=REPO, capture_output=True).returncode == 0
    assert stable(fresh) == stable(reference)


def test_run_experiment_refuses_a_workdir_of_another_configuration(tiny_run):
    config = config_lib.table1("blocks", "wl", "xgb", "delta")
    stored = json.loads((tiny_run / "config.json").read_text())
    config.data.pddl_root = stored["data"]["pddl_root"]
    config.data.cache_dir = stored["data"]["cache_dir"]
    config.xgb.rounds = 5  # the run was trained with 4
    with pytest.raises(InputError, match="another configuration"):
        pipeline.run_experiment(config, tiny_run.parent, seeds=[13], splits=["validation"])


def test_relative_root_is_stored_absolute(blocks_root, tmp_path, monkeypatch):
    config = config_lib.table1("blocks", "wl", "xgb", "delta")
    monkeypatch.chdir(blocks_root.parent)
    config.data.pddl_root = blocks_root.name
    config.data.cache_dir = str(tmp_path / "cache")
    config.xgb.rounds = 2
    pipeline.train_from_config(config, tmp_path / "run")
    assert json.loads((tmp_path / "run" / "config.json").read_text())["data"]["pddl_root"] == str(blocks_root)
    monkeypatch.chdir(tmp_path)
    assert evaluate(tmp_path / "run", "validation")["problems"] == 1


def test_bad_domain_makes_generate_plans_one_line(blocks_root, tmp_path):
    bad = tmp_path / "root"
    shutil.copytree(blocks_root, bad)
    (bad / "blocks" / "domain.pddl").write_text("(define (domain blocks)")
    proc = launch("generate_plans.py", f"--pddl_root={bad}", f"--workdir={tmp_path}/plans", "--splits=validation")
    one_error_line(proc, f"error: {bad}/blocks/domain.pddl:")
