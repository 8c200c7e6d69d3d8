"""The linear transition model: the primal ridge solution, exactly; saved and loaded through a workdir."""

import numpy as np
import pytest

from statecentric_jax import config as config_lib
from statecentric_jax.errors import InputError
from statecentric_jax.learning import config as learning_config
from statecentric_jax.learning import ridge, train
from tests import synthetic

TRAIN = synthetic.split("train", 8, seed=0)
VALIDATION = synthetic.split("validation", 3, seed=1)


def primal_ridge(x: np.ndarray, y: np.ndarray, alpha: float):
    """Reference: centred ridge in closed form over all 2D inputs and D outputs."""
    x, y = x.astype(np.float64), y.astype(np.float64)
    mean_x, mean_y = x.mean(axis=0), y.mean(axis=0)
    weights = np.linalg.solve((x - mean_x).T @ (x - mean_x) + alpha * np.eye(x.shape[1]), (x - mean_x).T @ (y - mean_y))
    return lambda rows: (rows - mean_x) @ weights + mean_y


@pytest.mark.parametrize("mode", ["delta", "state"])
def test_dual_fit_is_the_primal_ridge_solution(mode):
    settings = learning_config.ridge()
    settings.alphas, settings.rank = [0.5, 5.0], 0
    model, history = ridge.fit(TRAIN, VALIDATION, mode, settings, seed=0)
    x, y = ridge.rows(TRAIN, mode)
    x_val, y_val = ridge.rows(VALIDATION, mode)
    losses = []
    for alpha in (0.5, 5.0):
        reference = primal_ridge(x, y, alpha)
        losses.append(float(np.mean((reference(x_val) - y_val) ** 2)))
        if alpha == model.alpha:
            np.testing.assert_allclose(model.outputs_of(x_val), reference(x_val), rtol=1e-4, atol=1e-4)
    assert [row["validation_loss"] for row in history] == pytest.approx(losses, rel=1e-4)
    assert model.alpha == (0.5, 5.0)[int(np.argmin(losses))]
    states, goals = x_val[:, : synthetic.DIM], x_val[:, synthetic.DIM :]
    predicted, _ = model.predict_next(states, goals, None)
    expected = primal_ridge(x, y, model.alpha)(x_val) + (states if mode == "delta" else 0.0)
    np.testing.assert_allclose(predicted, expected, rtol=1e-4, atol=1e-4)


def test_only_varying_outputs_are_stored_and_the_others_are_their_mean():
    model, _ = ridge.fit(TRAIN, VALIDATION, "delta", learning_config.ridge(), seed=0)
    _, y = ridge.rows(TRAIN, "delta")
    varying = np.flatnonzero(y.max(axis=0) > y.min(axis=0))
    assert model.outputs.tolist() == varying.tolist()
    assert model.coef_right.shape == (len(y), len(varying))  # rank 64 does not lower it: exact


def test_a_lower_rank_keeps_the_best_factors_of_the_coefficients():
    settings = learning_config.ridge()
    settings.rank = 0
    exact, _ = ridge.fit(TRAIN, VALIDATION, "delta", settings, seed=0)
    settings.rank = 2
    low, _ = ridge.fit(TRAIN, VALIDATION, "delta", settings, seed=0)
    n, c = exact.coef_right.shape
    assert low.size()["rank"] == 2 and low.size()["coefficients"] == n * 2 + 2 * c
    coef = exact.coef_left @ exact.coef_right
    singular = np.linalg.svd(coef, compute_uv=False)
    error = np.linalg.norm(coef - low.coef_left @ low.coef_right)
    assert error == pytest.approx(np.sqrt(np.sum(singular[2:] ** 2)), rel=1e-6)


def test_trained_workdir_loads_the_same_predictions(tmp_path, monkeypatch):
    monkeypatch.setattr(train, "load_encoder", synthetic.load_fake_encoder)
    config = config_lib.table1("blocks", "wl", "xgb", "delta")
    config.data.domain, config.model.kind = "toy", "ridge"
    train.train_model(config, TRAIN, VALIDATION, synthetic.FakeEncoder("toy"), tmp_path)
    loaded = train.load_model(tmp_path).model
    fitted, _ = ridge.fit(TRAIN, VALIDATION, "delta", learning_config.ridge(), seed=0)
    x_val, _ = ridge.rows(VALIDATION, "delta")
    np.testing.assert_allclose(loaded.outputs_of(x_val), fitted.outputs_of(x_val), rtol=1e-5, atol=1e-5)
    (tmp_path / "checkpoint" / ridge.MODEL_FILE).write_bytes(b"not a model")
    with pytest.raises(InputError, match="corrupt ridge model"):
        train.load_model(tmp_path)


def test_non_positive_strength_is_refused():
    settings = learning_config.ridge()
    settings.alphas = [0.0]
    with pytest.raises(InputError, match="ridge.alphas"):
        ridge.fit(TRAIN, VALIDATION, "delta", settings, seed=0)
