"""The tree transition model: rows, training, early stopping, its multi-output strategies."""

import numpy as np
import pytest

from statecentric_jax.learning import config as learning_config
from statecentric_jax.learning import transitions, xgb
from tests import synthetic
from tests.launching import launch, one_error_line
from tests.synthetic import MODEL_TRAIN as TRAIN
from tests.synthetic import MODEL_VALIDATION as VALIDATION


def test_xgb_rows_flatten_all_transitions():
    features, target = xgb.rows(TRAIN, "delta")
    assert len(features) == len(target) == sum(len(t) - 1 for t in TRAIN.trajectories)
    np.testing.assert_array_equal(features[0], np.concatenate([TRAIN.trajectories[0][0], TRAIN.goals[0]]))
    np.testing.assert_array_equal(target[0], TRAIN.trajectories[0][1] - TRAIN.trajectories[0][0])


@pytest.mark.parametrize("mode", transitions.MODES)
def test_xgb_training_decreases_loss(mode):
    model, history = xgb.fit(TRAIN, VALIDATION, mode, synthetic.model_settings().xgb, seed=13)
    assert history[-1]["train_loss"] < 0.7 * history[0]["train_loss"]
    features, target = xgb.rows(VALIDATION, mode)
    predicted, carry = model.predict_next(features[:, : synthetic.DIM], features[:, synthetic.DIM :], None)
    assert carry is None
    next_states = features[:, : synthetic.DIM] + target if mode == "delta" else target
    best = min(row["validation_loss"] for row in history)
    np.testing.assert_allclose(np.mean((predicted - next_states) ** 2), best, rtol=1e-4)


def test_xgb_early_stopping_keeps_the_best_round():
    settings = synthetic.model_settings().xgb
    settings.rounds, settings.early_stopping, settings.learning_rate = 200, 3, 0.8
    model, history = xgb.fit(TRAIN, VALIDATION, "state", settings, seed=13)
    assert len(history) < 200
    best = min(range(len(history)), key=lambda i: history[i]["validation_loss"])
    assert model.size()["rounds"] == best + 1


@pytest.mark.parametrize("strategy", learning_config.MULTI_STRATEGIES)
def test_xgb_strategies_same_seed_same_predictions(strategy):
    settings = synthetic.model_settings().xgb
    settings.multi_strategy = strategy
    features, _ = xgb.rows(VALIDATION, "delta")
    states, goals = features[:, : synthetic.DIM], features[:, synthetic.DIM :]
    a, _ = xgb.fit(TRAIN, VALIDATION, "delta", settings, seed=3)
    b, _ = xgb.fit(TRAIN, VALIDATION, "delta", settings, seed=3)
    np.testing.assert_array_equal(a.predict_next(states, goals, None)[0], b.predict_next(states, goals, None)[0])
    size = a.size()
    assert size["trees"] == size["rounds"] * (synthetic.DIM if strategy == "one_output_per_tree" else 1)
    assert size["nodes"] > size["trees"]


def test_zero_byte_xgb_checkpoint_is_one_line(tiny_run_copy):
    (tiny_run_copy / "checkpoint" / "model.ubj").write_bytes(b"")
    one_error_line(
        launch("evaluate.py", f"--workdir={tiny_run_copy}"),
        f"error: {tiny_run_copy}/checkpoint/model.ubj: corrupt XGBoost model (empty file)",
    )
