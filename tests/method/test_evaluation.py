"""Evaluation on the tiny trained run: settings checked first, resume after a torn tail or kill -9,
stale or tampered results decoded again, one evaluation at a time, and every bad input one line."""

import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from statecentric_jax import config as config_lib
from statecentric_jax.atomic import exclusive_lock
from statecentric_jax.errors import InputError
from statecentric_jax.learning import value
from statecentric_jax.method import aggregation, shards
from statecentric_jax.method.evaluation import NOT_READ_BY_DECODING, evaluate, run_fingerprint
from statecentric_jax.search.base import decode_config
from tests.launching import REPO, launch, mounted_tmpfs, one_error_line

SPLIT = "test-extrapolation"


def lines_of(workdir, split=SPLIT):
    return (workdir / "eval" / split / "results.jsonl").read_text().splitlines()


def stable(workdir, split=SPLIT):
    return [
        {k: r[k] for k in ("problem_file", "solved", "plan", "outcome")}
        for r in json.loads((workdir / "eval" / split / "results.json").read_text())
    ]


@pytest.fixture(scope="module")
def reference(tiny_run, tmp_path_factory):
    """The tiny run's results on the test split, from one uninterrupted evaluation."""
    copy = tmp_path_factory.mktemp("reference") / "run"
    shutil.copytree(tiny_run, copy, ignore=shutil.ignore_patterns("eval"))
    return copy, evaluate(copy, SPLIT)


# settings checked before any work
def test_bad_decode_settings_refused(tiny_run_copy):
    for kwargs in ({"max_in_flight": 0}, {"beam_width": 0}, {"beam_width": -1}):
        with pytest.raises(InputError, match="at least 1"):
            evaluate(tiny_run_copy, SPLIT, **kwargs)
    assert not (tiny_run_copy / "eval" / SPLIT / "results.jsonl").exists()


def test_config_without_decode_is_refused(tiny_run_copy):
    config = json.loads((tiny_run_copy / "config.json").read_text())
    del config["decode"]
    (tiny_run_copy / "config.json").write_text(json.dumps(config))
    with pytest.raises(InputError, match="config.json"):
        evaluate(tiny_run_copy, SPLIT)


def test_the_split_is_checked_before_its_folder_is_made(tiny_run_copy):
    for split in ("../../escaped", "..", "a/b"):
        with pytest.raises(InputError, match="not a split name"):
            evaluate(tiny_run_copy, split)
    with pytest.raises(InputError, match="no split 'nosuch' for domain 'blocks'"):
        evaluate(tiny_run_copy, "nosuch")
    assert not (tiny_run_copy / "eval").exists() and not (tiny_run_copy.parent / "escaped").exists()
    one_error_line(
        launch("evaluate.py", f"--workdir={tiny_run_copy}", "--split=../../escaped"), "error: ../../escaped:"
    )


def test_ray_backend_without_ray_says_to_install_the_extra(tiny_run_copy):
    hide_ray = (
        "import runpy, sys; sys.modules['ray'] = None; sys.argv = sys.argv[1:];"
        " runpy.run_path(sys.argv[0], run_name='__main__')"
    )
    proc = subprocess.run(
        [sys.executable, "-c", hide_ray, "launch/evaluate.py", f"--workdir={tiny_run_copy}", "--backend=ray"],
        capture_output=True,
        text=True,
        cwd=REPO,
    )
    one_error_line(proc, "error: --backend=ray: Ray is not installed; install the ray extra: pip install -e '.[ray]'")


def test_jobs_deal_the_problems_into_processes_with_the_same_plans(tiny_run_copy, reference):
    proc = launch("evaluate.py", f"--workdir={tiny_run_copy}", "--jobs=2")
    assert proc.returncode == 0, proc.stderr
    assert stable(tiny_run_copy) == stable(reference[0])
    assert json.loads((tiny_run_copy / "eval" / SPLIT / "summary.json").read_text())["shards"] == 2
    assert len(lines_of(tiny_run_copy)) == reference[1]["problems"]


def _double_or_die(x: int) -> int:
    if x < 0:
        os._exit(3)  # as a process killed for memory: no answer
    return 2 * x


def test_a_process_that_dies_is_its_own_error():
    done = {}
    shards.run_in_processes(_double_or_die, {"a": (1,), "b": (-1,), "c": (2,)}, lambda *r: done.update({r[0]: r[1:]}))
    assert done == {"a": (2, None), "b": (None, "its process ended with exit code 3"), "c": (4, None)}


# writes that fail: one line naming the file; a rerun after freeing space recovers
def test_a_full_disk_is_one_line_and_the_rerun_recovers(tiny_run_copy, reference):
    out = tiny_run_copy / "eval" / SPLIT
    with mounted_tmpfs(out, "size=4k") as remount:
        proc = launch("evaluate.py", f"--workdir={tiny_run_copy}")
        one_error_line(proc, f"error: {out}/")
        assert "cannot write (No space left on device); free some space and run again" in proc.stderr
        assert not [p for p in out.iterdir() if p.name.endswith(".tmp")]  # no partial file left
        remount("size=1m")
        assert launch("evaluate.py", f"--workdir={tiny_run_copy}").returncode == 0
        assert stable(tiny_run_copy) == stable(reference[0])


def test_outputs_where_a_folder_or_file_is_expected(tiny_run_copy, tmp_path):
    out = tiny_run_copy / "eval" / SPLIT
    (out / "results.jsonl").mkdir(parents=True)
    one_error_line(launch("evaluate.py", f"--workdir={tiny_run_copy}"), f"error: {out}/results.jsonl: Is a directory")
    shutil.rmtree(tiny_run_copy / "eval")
    (tiny_run_copy / "eval").write_text("")
    one_error_line(launch("evaluate.py", f"--workdir={tiny_run_copy}"), f"error: {tiny_run_copy}/eval: is a file")


# files the evaluation wrote itself: garbage is rewritten, binary or not
@pytest.mark.parametrize("name", ["summary.json", "results.json", "results.csv", "results.jsonl"])
def test_garbage_in_an_output_is_recomputed(tiny_run_copy, reference, name):
    evaluate(tiny_run_copy, SPLIT)
    path = tiny_run_copy / "eval" / SPLIT / name
    if name == "results.jsonl":
        lines = path.read_bytes().splitlines(keepends=True)
        path.write_bytes(b"".join(lines[:-1]) + b"\xff\xfe\x00\x80 garbage\n")  # the last record is binary garbage
    else:
        path.write_bytes(b"\xff\xfe\x00\x80 garbage")
    summary = evaluate(tiny_run_copy, SPLIT)
    assert stable(tiny_run_copy) == stable(reference[0]) and summary["solved"] == reference[1]["solved"]
    assert json.loads((path.parent / "summary.json").read_text())["problems"] == 4


# tampered results: a reused record must replay to the goal
def test_a_cut_plan_with_its_fingerprint_kept_is_decoded_again(tiny_run_copy, reference):
    evaluate(tiny_run_copy, SPLIT)
    path = tiny_run_copy / "eval" / SPLIT / "results.jsonl"
    records = [json.loads(line) for line in lines_of(tiny_run_copy)]
    solved = [r for r in records if r["solved"]]
    assert solved, "the tiny run solves some test problems"
    for record in solved:
        record["plan"] = record["plan"][: len(record["plan"]) // 2]
        record["plan_length"] = len(record["plan"])
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    summary = evaluate(tiny_run_copy, SPLIT)
    assert summary["mean_plan_length"] == reference[1]["mean_plan_length"]
    assert stable(tiny_run_copy) == stable(reference[0])


def test_torn_tail_does_not_swallow_the_next_record(tiny_run_copy):
    evaluate(tiny_run_copy, SPLIT)
    lines = lines_of(tiny_run_copy)
    (tiny_run_copy / "eval" / SPLIT / "results.jsonl").write_text("\n".join(lines[:-1]) + "\n" + lines[-1][:20])
    evaluate(tiny_run_copy, SPLIT)
    assert len(lines_of(tiny_run_copy)) == len(lines)
    assert all(json.loads(line) for line in lines_of(tiny_run_copy))
    evaluate(tiny_run_copy, SPLIT)  # nothing left to decode
    assert len(lines_of(tiny_run_copy)) == len(lines)


# stale results: another model or setting decodes again
def test_other_beam_width_decodes_again(tiny_run_copy, tmp_path):
    other = tmp_path / "other"
    shutil.copytree(tiny_run_copy, other)
    evaluate(tiny_run_copy, SPLIT, beam_width=3)
    summary = evaluate(tiny_run_copy, SPLIT, beam_width=1)
    assert summary["beam_width"] == 1
    assert stable(tiny_run_copy) == (evaluate(other, SPLIT, beam_width=1) and stable(other))


def test_retrained_model_decodes_again(tiny_run_copy):
    evaluate(tiny_run_copy, SPLIT)
    before = len(lines_of(tiny_run_copy))
    model = tiny_run_copy / "checkpoint" / "model.ubj"
    model.write_bytes(model.read_bytes())  # same bytes: same fingerprint
    evaluate(tiny_run_copy, SPLIT)
    assert len(lines_of(tiny_run_copy)) == before
    for record in map(json.loads, lines_of(tiny_run_copy)):
        assert record["fingerprint"]
    old = {json.loads(line)["fingerprint"] for line in lines_of(tiny_run_copy)}
    (tiny_run_copy / "checkpoint" / "extra").write_bytes(b"x")  # a changed checkpoint is another model
    evaluate(tiny_run_copy, SPLIT)
    assert len(lines_of(tiny_run_copy)) == before  # decoded again; only the current records are kept
    assert not old & {json.loads(line)["fingerprint"] for line in lines_of(tiny_run_copy)}


def test_the_fingerprint_leaves_out_the_seed_and_training_records_but_not_the_model(tiny_run_copy, tmp_path):
    assert {aggregation.SUMMARY_FILE, aggregation.AGGREGATION_DIR} <= NOT_READ_BY_DECODING
    settings = decode_config(config_lib.table1("blocks", "wl", "xgb", "delta"))
    other = tmp_path / "other-seed"
    shutil.copytree(tiny_run_copy, other)
    config = json.loads((other / "config.json").read_text())
    (other / "config.json").write_text(json.dumps({**config, "seed": 14}))
    (other / "metrics.jsonl").write_text("{}\n")
    (other / aggregation.AGGREGATION_DIR).mkdir()
    (other / aggregation.AGGREGATION_DIR / "round1.json").write_text("{}")
    assert run_fingerprint(other, settings) == run_fingerprint(tiny_run_copy, settings)
    (other / "config.json").write_text(json.dumps({**config, "seed": 14, "other": 1}))  # anything but the seed
    assert run_fingerprint(other, settings) != run_fingerprint(tiny_run_copy, settings)
    (other / "config.json").write_text(json.dumps({**config, "seed": 14}))
    (other / "checkpoint" / "extra").write_bytes(b"x")  # another model
    assert run_fingerprint(other, settings) != run_fingerprint(tiny_run_copy, settings)


@pytest.mark.parametrize(
    ("name", "chosen"), [("estimate_helpful_only", True), ("prune_symmetric", True), ("preferred_boost", 1000)]
)
def test_a_run_stored_before_a_decode_setting_existed_keeps_its_fingerprint(tiny_run_copy, tmp_path, name, chosen):
    """A run's config.json without a setting added since reads as one with it at its default; another value is
    another fingerprint."""
    settings = decode_config(config_lib.table1("blocks", "wl", "xgb", "delta"))
    older = tmp_path / "older"
    shutil.copytree(tiny_run_copy, older)
    config = json.loads((older / "config.json").read_text())
    del config["decode"][name]
    (older / "config.json").write_text(json.dumps(config))
    assert run_fingerprint(older, settings) == run_fingerprint(tiny_run_copy, settings)
    config["decode"][name] = chosen
    (older / "config.json").write_text(json.dumps(config))
    assert run_fingerprint(older, settings) != run_fingerprint(tiny_run_copy, settings)


# resume keys on the resolved path
def test_same_problems_by_another_path_are_not_decoded_twice(tiny_run_copy, blocks_root, monkeypatch):
    evaluate(tiny_run_copy, SPLIT, pddl_root=blocks_root)
    monkeypatch.chdir(blocks_root.parent)
    evaluate(tiny_run_copy, SPLIT, pddl_root=blocks_root.name)
    assert len(lines_of(tiny_run_copy)) == 4


# one evaluation of a split at a time
def test_second_evaluation_of_a_split_is_refused(tiny_run_copy):
    with exclusive_lock(tiny_run_copy / "eval" / SPLIT, "an evaluation"):
        with pytest.raises(InputError, match=f"pid {os.getpid()}"):
            evaluate(tiny_run_copy, SPLIT)
        one_error_line(launch("evaluate.py", f"--workdir={tiny_run_copy}"), f"error: {tiny_run_copy}/eval/{SPLIT}:")
    evaluate(tiny_run_copy, SPLIT)  # released


# fault injection: kill evaluation at random points, the final results equal an uninterrupted run
def test_killed_evaluations_resume_to_the_uninterrupted_result(tiny_run_copy, reference):
    rng = random.Random(0)
    command = [sys.executable, str(REPO / "launch" / "evaluate.py"), f"--workdir={tiny_run_copy}"]
    for _ in range(2):
        proc = subprocess.Popen(command, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(rng.uniform(1.0, 6.0))
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    assert subprocess.run(command, cwd=REPO, capture_output=True).returncode == 0
    assert stable(tiny_run_copy) == stable(reference[0])


# bad input: one line, exit 2
def test_bad_domain_is_one_line_for_the_whole_split(tiny_run_copy, blocks_root, tmp_path):
    bad = tmp_path / "root"
    shutil.copytree(blocks_root, bad)
    (bad / "blocks" / "domain.pddl").write_text("(define (domain blocks)")
    one_error_line(
        launch("evaluate.py", f"--workdir={tiny_run_copy}", f"--pddl_root={bad}"), f"error: {bad}/blocks/domain.pddl:"
    )


def test_a_cost_to_go_of_another_size_is_refused_at_load(tiny_run_copy):
    config = json.loads((tiny_run_copy / "config.json").read_text())
    config["value"]["kind"] = "ridge"
    (tiny_run_copy / "config.json").write_text(json.dumps(config))
    value.RidgeCostToGo(np.zeros(7), 0.0, 1.0).save(tiny_run_copy)  # 7 weights: another embedding's
    one_error_line(
        launch("evaluate.py", f"--workdir={tiny_run_copy}"),
        f"error: {tiny_run_copy}/value.npz: weights of shape (7,), expected",
    )


def test_plan_out_checked_first_and_unsolved_is_exit_1(tiny_run_copy, blocks_root, tmp_path):
    args = [
        f"--workdir={tiny_run_copy}",
        f"--domain={blocks_root}/blocks/domain.pddl",
        f"--problem={blocks_root}/blocks/train/b3-0.pddl",
    ]
    one_error_line(launch("plan.py", *args, f"--out={tmp_path}/missing/p.txt"), f"error: {tmp_path}/missing/p.txt:")
    one_error_line(launch("plan.py", *args, f"--out={tmp_path}"), f"error: {tmp_path}: cannot write the plan here")
    (tmp_path / "afile").write_text("")
    one_error_line(launch("plan.py", *args, f"--out={tmp_path}/afile/p.txt"), f"error: {tmp_path}/afile/p.txt:")
    proc = launch("plan.py", *args, f"--out={tmp_path}/p.txt", "--config.decode.horizon_base=0")
    assert proc.returncode == 2  # plan.py has no --config; flags errors stay exit 2


def test_a_problem_of_another_domain_is_bad_input(tiny_run_copy, data_root, tmp_path):
    gripper = data_root / "domains" / "gripper"
    problem = sorted((gripper / "validation").glob("*.pddl"))[0]
    proc = launch(
        "plan.py",
        f"--workdir={tiny_run_copy}",
        f"--domain={gripper}/domain.pddl",
        f"--problem={problem}",
        f"--out={tmp_path}/p.txt",
    )
    one_error_line(proc, f"error: {problem}: a problem of domain 'gripper-strips', not of the run's domain 'blocks'")
