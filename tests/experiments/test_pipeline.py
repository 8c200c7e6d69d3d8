"""End to end on a tiny Blocksworld root: plans -> dataset -> train -> evaluate -> plan,
with the trained run restored from disk in fresh processes."""

import json
import pathlib
import shutil
import subprocess
import sys

import pytest

from statecentric_jax import config as config_lib
from statecentric_jax.errors import InputError
from statecentric_jax.experiments import evaluation, pipeline
from statecentric_jax.planning.plans import read_plan, simulate
from statecentric_jax.planning.tasks import load_task
from statecentric_jax.problems import generators

REPO = pathlib.Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def root(tmp_path_factory):
    root = tmp_path_factory.mktemp("pddl")
    base = root / "blocks"
    for split, sizes in {"train": [3, 4, 4, 5], "validation": [4], "test-extrapolation": [5, 6]}.items():
        (base / split).mkdir(parents=True)
        for i, n in enumerate(sizes):
            (base / split / f"b{n}-{i}.pddl").write_text(generators.blocks(n, seed=i, name=f"b{n}-{i}"))
    (base / "domain.pddl").write_text((REPO / "data/domains/blocks/domain.pddl").read_text())
    (root / "easy.pddl").write_text(
        "(define (problem easy) (:domain blocks) (:objects a b)"
        " (:init (clear a) (clear b) (ontable a) (ontable b) (handempty)) (:goal (and (on a b))))"
    )
    return root


@pytest.fixture(scope="module")
def experiment(root, tmp_path_factory):
    config = config_lib.table1("blocks", "wl", "xgb", "delta")
    config.data.pddl_root = str(root)
    config.data.cache_dir = str(tmp_path_factory.mktemp("cache"))
    config.xgb.rounds = 4
    workdir = tmp_path_factory.mktemp("run")
    rates = pipeline.run_experiment(config, workdir, seeds=[13], splits=["validation", "test-extrapolation"])
    return config, workdir, rates


def test_experiment_writes_results_with_valid_plans(root, experiment):
    _, workdir, rates = experiment
    assert set(rates) == {"validation", "test-extrapolation"} and set(rates["validation"]) == {"13"}
    summary = json.loads((workdir / "seed13/eval/test-extrapolation/summary.json").read_text())
    results = json.loads((workdir / "seed13/eval/test-extrapolation/results.json").read_text())
    assert summary["problems"] == 2 and summary["solved"] == sum(r["solved"] for r in results)
    assert summary["success_rate"] == rates["test-extrapolation"]["13"]
    for record in results:
        task = load_task(root / "blocks/domain.pddl", record["problem_file"])
        trajectory = simulate(task, record["plan"], require_goal=record["solved"])
        assert len(trajectory) == record["plan_length"] + 1
    assert (workdir / "seed13/eval/test-extrapolation/results.csv").read_text().startswith("problem_file,")


def test_rerun_skips_finished_work(experiment, monkeypatch):
    config, workdir, rates = experiment

    def fail(*args, **kwargs):
        raise AssertionError("finished work was redone")

    monkeypatch.setattr(pipeline.train, "train_models", fail)
    monkeypatch.setattr(pipeline.evaluation, "decode", fail)
    assert pipeline.run_experiment(config, workdir, seeds=[13], splits=["validation", "test-extrapolation"]) == rates


def test_stale_results_are_decoded_again_and_another_config_is_refused(experiment, tmp_path):
    config, workdir, _ = experiment
    seed_dir = workdir / "seed13"
    results = seed_dir / "eval/validation/results.jsonl"
    first = json.loads((seed_dir / "eval/validation/summary.json").read_text())
    before = {json.loads(line)["fingerprint"] for line in results.read_text().splitlines()}
    narrower = evaluation.evaluate(seed_dir, "validation", beam_width=1)  # not the beam-3 results again
    assert narrower["beam_width"] == 1 and narrower["fingerprint"] != first["fingerprint"]
    after = [json.loads(line)["fingerprint"] for line in results.read_text().splitlines()]
    assert len(after) == first["problems"] and not before & set(after)
    other = config.copy_and_resolve_references()
    other.decode.beam_width = 5
    with pytest.raises(InputError, match="another configuration"):
        pipeline.run_experiment(other, workdir, seeds=[13], splits=["validation"])


def test_a_run_trained_before_a_config_section_existed_resumes(experiment, monkeypatch):
    config, workdir, rates = experiment
    stored = workdir / "seed13" / "config.json"
    older = json.loads(stored.read_text())
    del older["aggregation"]  # added to the config after this run was trained: means its defaults
    stored.write_text(json.dumps(older))
    monkeypatch.setattr(pipeline.train, "train_models", lambda *a, **k: pytest.fail("retrained"))
    assert pipeline.run_experiment(config, workdir, seeds=[13], splits=["validation", "test-extrapolation"]) == rates
    other = config.copy_and_resolve_references()
    other.aggregation.rounds = 1  # not the default the old run stands for
    with pytest.raises(InputError, match="another configuration"):
        pipeline.run_experiment(other, workdir, seeds=[13], splits=["validation"])


def run_launch(script, *args):
    return subprocess.run(
        [sys.executable, str(REPO / "launch" / script), *args], capture_output=True, text=True, cwd=REPO
    )


def test_plan_and_evaluate_in_fresh_processes(root, experiment, tmp_path):
    _, workdir, _ = experiment
    out = tmp_path / "plan.txt"
    proc = run_launch(
        "plan.py",
        f"--workdir={workdir}/seed13",
        f"--domain={root}/blocks/domain.pddl",
        f"--problem={root}/easy.pddl",
        f"--out={out}",
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    task = load_task(root / "blocks/domain.pddl", root / "easy.pddl")
    assert task.goal_reached(simulate(task, read_plan(out))[-1])

    (root / "never.pddl").write_text(
        "(define (problem never) (:domain blocks) (:objects a) (:init (clear a) (ontable a) (handempty))"
        " (:goal (and (on a a))))"
    )
    never = [f"--workdir={workdir}/seed13", f"--domain={root}/blocks/domain.pddl", f"--problem={root}/never.pddl"]
    proc = run_launch("plan.py", *never, f"--out={tmp_path}/never.txt")
    assert proc.returncode == 1 and proc.stderr.strip().splitlines()[-1].startswith("not solved: ")
    assert not (tmp_path / "never.txt").exists()
    proc = run_launch("plan.py", *never, f"--out={tmp_path}/missing/p.txt")
    assert proc.returncode == 2 and "cannot write the plan here" in proc.stderr.strip().splitlines()[-1]

    proc = run_launch("evaluate.py", f"--workdir={workdir}/seed13", "--split=train")
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert json.loads((workdir / "seed13/eval/train/summary.json").read_text())["problems"] == 4


def test_bad_workdir_is_one_line_error(tmp_path, root):
    (tmp_path / "config.json").write_text("{not json")
    proc = run_launch(
        "plan.py",
        f"--workdir={tmp_path}",
        f"--domain={root}/blocks/domain.pddl",
        f"--problem={root}/easy.pddl",
        f"--out={tmp_path}/p.txt",
    )
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines()[-1].startswith(f"error: {tmp_path}/config.json: corrupt config")


def test_resume_trains_only_missing_seeds_and_xgboost_gives_every_seed_the_same_model(
    experiment, tmp_path, monkeypatch
):
    config, finished, _ = experiment
    workdir = tmp_path / "run"
    shutil.copytree(finished, workdir)
    trained, train_models = [], pipeline.train.train_models

    def spy(config, train_split, validation, encoder, workdirs):
        trained.append(sorted(workdirs))
        return train_models(config, train_split, validation, encoder, workdirs)

    monkeypatch.setattr(pipeline.train, "train_models", spy)
    pipeline.run_experiment(config, workdir, seeds=[13, 14, 15], splits=["validation"])
    assert trained == [[14, 15]]  # seed 13 was finished
    models = {(workdir / f"seed{s}/checkpoint/model.ubj").read_bytes() for s in (13, 14, 15)}
    assert len(models) == 1  # XGBoost does not depend on the seed: trained once, the same as seed 13's
    how = json.loads((workdir / "seed15" / pipeline.train.TRAINING_FILE).read_text())
    assert how["trained_once_for_seeds"] == [14, 15]
    pipeline.run_experiment(config, workdir, seeds=[13, 14, 15], splits=["validation"])
    assert trained == [[14, 15]]  # nothing left to train
