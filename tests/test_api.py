"""The package's top level, the public API: train, plan and evaluate on the tiny run (conftest.py)."""

import json
import shutil
import subprocess
import sys

import statecentric_jax
from statecentric_jax.learning import train
from statecentric_jax.planning.plans import simulate
from statecentric_jax.planning.tasks import load_task


def test_the_api_is_three_calls_and_importing_it_loads_no_library():
    assert statecentric_jax.__all__ == ["evaluate", "plan", "train"]
    code = (
        "import sys, statecentric_jax; print(sorted({'jax', 'xgboost', 'statecentric_jax.method'} & set(sys.modules)))"
    )
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert loaded.strip() == "[]"


def test_train_gives_the_run_the_pipeline_trains(tiny_config, tiny_run, tmp_path):
    """Seed 13, the config's own, as `launch/train.py` and the tiny run's pipeline train it."""
    assert statecentric_jax.train(tiny_config, tmp_path / "run") == tmp_path / "run"
    ours, theirs = (train.read_config(d) for d in (tmp_path / "run", tiny_run))
    assert ours.to_dict() == theirs.to_dict()
    ours, theirs = ((d / train.CHECKPOINT_DIR / "model.ubj").read_bytes() for d in (tmp_path / "run", tiny_run))
    assert ours == theirs


def test_plan_returns_the_actions_or_none(blocks_root, tiny_run):
    domain, easy = blocks_root / "blocks/domain.pddl", blocks_root / "easy.pddl"
    plan = statecentric_jax.plan(tiny_run, domain, easy)
    assert plan is not None and all(isinstance(action, str) and action.startswith("(") for action in plan)
    simulate(load_task(domain, easy), plan)  # raises unless the plan reaches the goal
    assert statecentric_jax.plan(tiny_run, domain, easy, strategy="best_first", budget=50) == plan
    hard = blocks_root / "blocks/test-extrapolation/b7-3.pddl"
    assert statecentric_jax.plan(tiny_run, domain, hard, horizon_base=1, horizon_per_object=0) is None  # 1 step


def test_evaluate_decodes_a_split_and_returns_its_summary(blocks_root, tiny_run, tmp_path):
    run = tmp_path / "run"
    shutil.copytree(tiny_run, run, ignore=shutil.ignore_patterns("eval"))
    summary = statecentric_jax.evaluate(run, "test-interpolation")
    assert summary["problems"] == 1 and 0 <= summary["solved"] <= 1
    assert json.loads((run / "eval/test-interpolation/summary.json").read_text()) == summary
    assert statecentric_jax.evaluate(run, "test-interpolation", beam_width=1)["beam_width"] == 1
