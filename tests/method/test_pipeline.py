"""End to end on a tiny Blocksworld root: plans -> dataset -> train -> evaluate -> plan,
with the trained run restored from disk in fresh processes."""

import json
import os
import pathlib
import shutil
import subprocess
import sys

import pytest

from statecentric_jax.atomic import exclusive_lock
from statecentric_jax.errors import InputError
from statecentric_jax.learning import ensemble
from statecentric_jax.method import evaluation, pipeline
from statecentric_jax.planning.elimination import eliminate_actions
from statecentric_jax.planning.plans import read_plan, simulate
from statecentric_jax.planning.tasks import load_task
from tests.conftest import tiny_config_for
from tests.launching import launch, one_error_line

REPO = pathlib.Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def experiment(blocks_root, tiny_cache, tmp_path_factory):
    """The tiny run (conftest.py) in a workdir of its own, which these tests change, evaluated on two splits."""
    config = tiny_config_for(blocks_root, tiny_cache)
    workdir = tmp_path_factory.mktemp("run")
    rates = pipeline.run_experiment(config, workdir, seeds=[13], splits=["validation", "test-extrapolation"])
    return config, workdir, rates


def test_experiment_writes_results_with_valid_plans(blocks_root, experiment):
    _, workdir, rates = experiment
    assert set(rates) == {"validation", "test-extrapolation"} and set(rates["validation"]) == {"13"}
    summary = json.loads((workdir / "seed13/eval/test-extrapolation/summary.json").read_text())
    results = json.loads((workdir / "seed13/eval/test-extrapolation/results.json").read_text())
    assert summary["problems"] == 4 and summary["solved"] == sum(r["solved"] for r in results)
    assert summary["success_rate"] == rates["test-extrapolation"]["13"]
    for record in results:
        task = load_task(blocks_root / "blocks/domain.pddl", record["problem_file"])
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


def test_another_cache_jobs_or_spelling_of_the_root_is_the_same_run(blocks_root, experiment, monkeypatch, tmp_path):
    config, workdir, rates = experiment
    moved = config.copy_and_resolve_references()
    moved.data.cache_dir = str(tmp_path / "another-cache")  # content-keyed: where it is changes nothing
    moved.data.jobs = 2
    (tmp_path / "link").symlink_to(blocks_root)
    moved.data.pddl_root = str(tmp_path / "link")
    monkeypatch.setattr(pipeline.train, "train_models", lambda *a, **k: pytest.fail("retrained"))
    monkeypatch.setattr(pipeline.evaluation, "decode", lambda *a, **k: pytest.fail("decoded again"))
    assert pipeline.run_experiment(moved, workdir, seeds=[13], splits=["validation", "test-extrapolation"]) == rates


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
    del older["aggregation"], older["ensemble"]  # added to the config after this run was trained: their defaults
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


def test_plan_and_evaluate_in_fresh_processes(blocks_root, experiment, tmp_path):
    _, workdir, _ = experiment
    out = tmp_path / "plan.txt"
    proc = run_launch(
        "plan.py",
        f"--workdir={workdir}/seed13",
        f"--domain={blocks_root}/blocks/domain.pddl",
        f"--problem={blocks_root}/easy.pddl",
        f"--out={out}",
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    task = load_task(blocks_root / "blocks/domain.pddl", blocks_root / "easy.pddl")
    assert task.goal_reached(simulate(task, read_plan(out))[-1])

    (blocks_root / "never.pddl").write_text(
        "(define (problem never) (:domain blocks) (:objects a) (:init (clear a) (ontable a) (handempty))"
        " (:goal (and (on a a))))"
    )
    domain = blocks_root / "blocks/domain.pddl"
    never = [f"--workdir={workdir}/seed13", f"--domain={domain}", f"--problem={blocks_root / 'never.pddl'}"]
    proc = run_launch("plan.py", *never, f"--out={tmp_path}/never.txt")
    assert proc.returncode == 1 and proc.stderr.strip().splitlines()[-1].startswith("not solved: ")
    assert not (tmp_path / "never.txt").exists()
    proc = run_launch("plan.py", *never, f"--out={tmp_path}/missing/p.txt")
    assert proc.returncode == 2 and "cannot write the plan here" in proc.stderr.strip().splitlines()[-1]
    hard = [
        f"--workdir={workdir}/seed13",
        f"--domain={domain}",
        f"--problem={blocks_root}/blocks/test-extrapolation/b7-3.pddl",
    ]
    proc = run_launch("plan.py", *hard, f"--out={tmp_path}/hard.txt", "--strategy=best_first", "--time_limit=1e-9")
    assert proc.returncode == 1 and ": timeout after " in proc.stderr.strip().splitlines()[-1], proc.stderr[-2000:]

    proc = run_launch("evaluate.py", f"--workdir={workdir}/seed13", "--split=train")
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert json.loads((workdir / "seed13/eval/train/summary.json").read_text())["problems"] == 4


def test_evaluation_and_planning_take_a_goal_agenda_and_action_elimination(blocks_root, experiment, tmp_path):
    _, workdir, _ = experiment
    domain = blocks_root / "blocks/domain.pddl"
    plans = {}
    for eliminate in (False, True):
        out = tmp_path / f"agenda-{eliminate}"
        summary = evaluation.evaluate(
            workdir / "seed13",
            "test-extrapolation",
            strategy="best_first",
            goal_agenda=1,
            action_elimination=eliminate,
            out_dir=out,
        )
        assert (summary["strategy"], summary["goal_agenda"], summary["problems"]) == ("best_first", 1, 4)
        assert summary["action_elimination"] == eliminate
        plans[eliminate] = {r["problem_file"]: r for r in json.loads((out / "results.json").read_text())}
    for problem_file, record in plans[False].items():
        task = load_task(domain, problem_file)
        if record["solved"]:
            simulate(task, record["plan"])
        expected = eliminate_actions(task, record["plan"]) if record["solved"] else record["plan"]
        assert plans[True][problem_file]["plan"] == expected
    result = evaluation.plan_problem(
        workdir / "seed13",
        str(domain),
        str(blocks_root / "easy.pddl"),
        tmp_path / "easy.txt",
        strategy="best_first",
        goal_agenda=1,
    )
    assert result.solved and read_plan(tmp_path / "easy.txt") == result.plan
    proc = run_launch("plan.py", f"--workdir={workdir}/seed13", f"--domain={domain}", "--problem=x", "--goal_agenda=-1")
    assert proc.returncode != 0 and "goal_agenda" in proc.stderr
    out = tmp_path / "short.txt"
    easy = blocks_root / "easy.pddl"
    args = [f"--workdir={workdir}/seed13", f"--domain={domain}", f"--problem={easy}", f"--out={out}"]
    proc = run_launch("plan.py", *args, "--strategy=best_first", "--goal_agenda=1", "--action_elimination")
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert read_plan(out) == eliminate_actions(load_task(domain, blocks_root / "easy.pddl"), result.plan)


def test_an_exploration_queue_without_a_cost_to_go_is_one_line_error(blocks_root, experiment, tmp_path):
    """The paper's run has no cost-to-go: a queue would go unused, so a result must not claim it."""
    _, workdir, _ = experiment
    for strategy, needs in (("beam", "--strategy=best_first"), ("best_first", "a run with a cost-to-go")):
        with pytest.raises(InputError, match=f"exploration 'preferred' needs .*: use {needs}"):
            evaluation.evaluate(
                workdir / "seed13", "validation", strategy=strategy, exploration="preferred", out_dir=tmp_path / "x"
            )
    assert not (tmp_path / "x").exists()  # refused before anything is written
    out = tmp_path / "p.txt"
    domain, easy = blocks_root / "blocks/domain.pddl", blocks_root / "easy.pddl"
    args = [f"--workdir={workdir}/seed13", f"--domain={domain}", f"--problem={easy}"]
    proc = run_launch("plan.py", *args, f"--out={out}", "--strategy=best_first", "--exploration=novelty")
    assert proc.returncode == 2 and not out.exists()
    assert proc.stderr.strip().splitlines()[-1].startswith("error: exploration 'novelty' needs best-first")


def test_lazy_best_first_without_a_cost_to_go_is_one_line_error(blocks_root, experiment, tmp_path):
    _, workdir, _ = experiment
    out = tmp_path / "p.txt"
    domain, easy = blocks_root / "blocks/domain.pddl", blocks_root / "easy.pddl"
    args = [f"--workdir={workdir}/seed13", f"--domain={domain}", f"--problem={easy}", f"--out={out}"]
    proc = run_launch("plan.py", *args, "--strategy=lazy_best_first")
    assert proc.returncode == 2 and not out.exists()
    assert proc.stderr.strip().splitlines()[-1] == (
        "error: decode.strategy=lazy_best_first defers a cost-to-go's estimates: it needs one"
    )


def test_bad_workdir_is_one_line_error(tmp_path, blocks_root):
    (tmp_path / "config.json").write_text("{not json")
    proc = run_launch(
        "plan.py",
        f"--workdir={tmp_path}",
        f"--domain={blocks_root}/blocks/domain.pddl",
        f"--problem={blocks_root}/easy.pddl",
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

    def spy(config, train_split, validation, encoder, workdirs, value_data=None):
        trained.append(sorted(workdirs))
        return train_models(config, train_split, validation, encoder, workdirs, value_data)

    monkeypatch.setattr(pipeline.train, "train_models", spy)
    pipeline.run_experiment(config, workdir, seeds=[13, 14, 15], splits=["validation"])
    assert trained == [[14, 15]]  # seed 13 was finished
    models = {(workdir / f"seed{s}/checkpoint/model.ubj").read_bytes() for s in (13, 14, 15)}
    assert len(models) == 1  # XGBoost does not depend on the seed: trained once, the same as seed 13's
    how = json.loads((workdir / "seed15" / pipeline.train.TRAINING_FILE).read_text())
    assert how["trained_once_for_seeds"] == [14, 15]
    # so seed 15 takes seed 14's results instead of decoding them again, and says so (seed 13's stored
    # config may be an older one, edited by another test: then its results are not taken)
    results = [json.loads((workdir / f"seed{s}/eval/validation/results.json").read_text()) for s in (14, 15)]
    assert results[0] == results[1] and results[0]
    summary = json.loads((workdir / "seed15/eval/validation/summary.json").read_text())
    assert summary["results_of_another_seed"] == len(results[0])
    pipeline.run_experiment(config, workdir, seeds=[13, 14, 15], splits=["validation"])
    assert trained == [[14, 15]]  # nothing left to train


@pytest.fixture(scope="module")
def ensemble_experiment(experiment, tmp_path_factory):
    """The experiment's configuration with a small WL-LSTM state model beside it."""
    config = experiment[0].copy_and_resolve_references()
    config.ensemble.members = "lstm:state"
    config.lstm.hidden, config.lstm.epochs = 8, 3
    workdir = tmp_path_factory.mktemp("ensemble")
    rates = pipeline.run_experiment(config, workdir, seeds=[13], splits=["validation"])
    return config, workdir, rates


def test_an_ensemble_config_trains_its_members_beside_the_model(experiment, ensemble_experiment):
    _, single, _ = experiment
    _, workdir, _ = ensemble_experiment
    seed_dir = workdir / "seed13"
    assert json.loads((seed_dir / ensemble.ENSEMBLE_FILE).read_text())["members"] == [".", "members/lstm_state"]
    member = pipeline.train.read_config(seed_dir / "members/lstm_state")
    assert (member.model.kind, member.model.mode, member.seed, member.ensemble.members) == ("lstm", "state", 13, "")
    model = "checkpoint/model.ubj"  # the configured model is the one trained without an ensemble
    assert (seed_dir / model).read_bytes() == (single / "seed13" / model).read_bytes()
    fingerprints = [
        json.loads((d / "eval/validation/summary.json").read_text())["fingerprint"]
        for d in (single / "seed13", seed_dir)
    ]
    assert fingerprints[0] != fingerprints[1]
    assert not (single / "seed13" / ensemble.ENSEMBLE_FILE).exists() and not (single / "seed13/members").exists()


def _decoded_models(monkeypatch):
    """The models evaluation decodes with, from here on."""
    models, decode = [], evaluation.decode

    def spy(tasks, model, *args, **kwargs):
        models.append(model)
        return decode(tasks, model, *args, **kwargs)

    monkeypatch.setattr(evaluation, "decode", spy)
    return models


def test_evaluation_and_planning_decode_with_the_ensemble_and_a_changed_member_is_decoded_again(
    blocks_root, ensemble_experiment, tmp_path, monkeypatch
):
    config, finished, rates = ensemble_experiment
    workdir = tmp_path / "run"
    shutil.copytree(finished, workdir)
    models = _decoded_models(monkeypatch)
    monkeypatch.setattr(pipeline.train, "train_models", lambda *a, **k: pytest.fail("retrained"))
    assert pipeline.run_experiment(config, workdir, seeds=[13], splits=["validation"]) == rates
    assert models == []  # resumed: nothing trained or decoded again
    summary = workdir / "seed13/eval/validation/summary.json"
    before = json.loads(summary.read_text())["fingerprint"]
    (workdir / "seed13/members/lstm_state/checkpoint/extra").write_bytes(b"x")  # stands for a retrained member
    evaluation.evaluate(workdir / "seed13", "validation")
    assert json.loads(summary.read_text())["fingerprint"] != before
    result = evaluation.plan_problem(
        workdir / "seed13", blocks_root / "blocks/domain.pddl", blocks_root / "easy.pddl", tmp_path / "plan.txt"
    )
    assert result.solved and len(models) == 2
    assert all(isinstance(m, ensemble.EnsembleModel) and len(m.members) == 2 for m in models)
    assert {m.kind for m in models[0].members} == {"xgb", "lstm"}


def test_members_outside_the_run_are_in_its_fingerprint(experiment, ensemble_experiment, tmp_path, monkeypatch):
    for name, run in (
        ("xgb", experiment[1] / "seed13"),
        ("lstm", ensemble_experiment[1] / "seed13/members/lstm_state"),
    ):
        shutil.copytree(run, tmp_path / name, ignore=shutil.ignore_patterns("eval"))
    ensemble.write(tmp_path / "ensemble", [tmp_path / "xgb", tmp_path / "lstm"])
    models = _decoded_models(monkeypatch)
    first = evaluation.evaluate(tmp_path / "ensemble", "validation")
    (tmp_path / "lstm/checkpoint/extra").write_bytes(b"x")  # stands for a retrained member
    second = evaluation.evaluate(tmp_path / "ensemble", "validation")
    assert first["fingerprint"] != second["fingerprint"] and len(models) == 2


def test_a_bad_ensemble_member_is_one_line_error(blocks_root, tmp_path):
    proc = run_launch(
        "run_experiment.py",
        "--config=configs/blocks_wl_xgb_delta.py",
        f"--config.data.pddl_root={blocks_root}",
        "--config.ensemble.members=lstm:stat",
        f"--workdir={tmp_path}/run",
    )
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr.strip().splitlines()[-1].startswith("error: config ensemble.members='lstm:stat': ")
    assert not (tmp_path / "run").exists()


def test_run_experiment_refuses_a_workdir_of_another_configuration(tiny_run, blocks_root):
    stored = json.loads((tiny_run / "config.json").read_text())
    config = tiny_config_for(blocks_root, stored["data"]["cache_dir"])
    config.xgb.rounds = 5  # the run was trained with 4
    with pytest.raises(InputError, match="another configuration"):
        pipeline.run_experiment(config, tiny_run.parent, seeds=[13], splits=["validation"])


def test_relative_root_is_stored_absolute(blocks_root, tmp_path, monkeypatch):
    monkeypatch.chdir(blocks_root.parent)
    config = tiny_config_for(pathlib.Path(blocks_root.name), tmp_path / "cache")
    config.xgb.rounds = 2
    pipeline.train_from_config(config, tmp_path / "run")
    assert json.loads((tmp_path / "run" / "config.json").read_text())["data"]["pddl_root"] == str(blocks_root)
    monkeypatch.chdir(tmp_path)
    assert evaluation.evaluate(tmp_path / "run", "validation")["problems"] == 1


def test_a_second_experiment_in_one_workdir_is_refused(blocks_root, tmp_path):
    config = tiny_config_for(blocks_root, tmp_path / "cache")
    with exclusive_lock(tmp_path / "run", "an experiment"):
        with pytest.raises(InputError, match=f"an experiment is already running here .pid {os.getpid()}."):
            pipeline.run_experiment(config, tmp_path / "run", seeds=[13], splits=["validation"])
        proc = launch(
            "run_experiment.py", f"--config={REPO}/configs/blocks_wl_xgb_delta.py", f"--workdir={tmp_path}/run"
        )
        one_error_line(proc, f"error: {tmp_path}/run: an experiment is already running here (pid {os.getpid()})")
    assert not (tmp_path / "cache").exists() and not (tmp_path / "run" / "seed13").exists()  # nothing trained


def test_output_folders_are_checked_before_training(tmp_path):
    (tmp_path / "afile").write_text("")
    config = f"--config={REPO}/configs/blocks_wl_xgb_delta.py"
    for script in ("train.py", "run_experiment.py"):
        one_error_line(launch(script, config, f"--workdir={tmp_path}/afile"), f"error: {tmp_path}/afile: is a file")
        proc = launch(script, config, f"--workdir={tmp_path}/run", f"--config.data.cache_dir={tmp_path}/afile/cache")
        one_error_line(proc, f"error: {tmp_path}/afile: is a file, not a folder (for {tmp_path}/afile/cache)")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["afile"]


def test_a_goal_nested_deep_is_planned_and_a_deep_bad_one_fails_alone(blocks_root, experiment, tmp_path):
    """A conjunction nested 600 deep is read like a flat one; a negation nested as deep is that problem's error."""
    _, workdir, _ = experiment
    easy = (blocks_root / "easy.pddl").read_text()
    (tmp_path / "nested.pddl").write_text(easy.replace("(and (on a b))", "(and " * 600 + "(on a b)" + ")" * 600))
    (tmp_path / "negated.pddl").write_text(easy.replace("(and (on a b))", "(not " * 600 + "(on a b)" + ")" * 600))
    files = [tmp_path / "nested.pddl", tmp_path / "negated.pddl", blocks_root / "easy.pddl"]
    summary = evaluation.evaluate(workdir / "seed13", "validation", problem_files=files, out_dir=tmp_path / "eval")
    results = {
        pathlib.Path(r["problem_file"]).name: r for r in json.loads((tmp_path / "eval/results.json").read_text())
    }
    assert (summary["problems"], summary["solved"]) == (3, 2)
    assert results["nested.pddl"]["plan"] == results["easy.pddl"]["plan"] == ["(pick-up a)", "(stack a b)"]
    assert results["negated.pddl"]["outcome"].startswith("cannot load: unsupported feature: negation of a compound")
