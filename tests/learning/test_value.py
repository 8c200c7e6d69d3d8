"""The learned cost-to-go: fits remaining steps, generalises on a linear rule, saves and loads."""

import types

import numpy as np
import pytest
import scipy.sparse

from statecentric_jax import config as config_lib
from statecentric_jax.errors import InputError
from statecentric_jax.learning import train, value
from statecentric_jax.method import evaluation
from statecentric_jax.search.base import DecodeConfig
from tests import synthetic
from tests.synthetic import TRAIN, VALIDATION, small_config

# In the synthetic splits the remaining steps are sum(goal - state): linear in [φ(s), φ(g)].
LARGER = synthetic.split("larger", 4, seed=2)
LARGER.goals *= 3  # three times the counts of anything seen in training
LARGER.trajectories = [synthetic.trajectory(g) for g in LARGER.goals]


def test_labels_are_remaining_steps():
    features, targets = value.labelled_rows(TRAIN)
    first = TRAIN.trajectories[0]
    assert list(targets[: len(first)]) == list(range(len(first) - 1, -1, -1))
    assert features.shape == (sum(len(t) for t in TRAIN.trajectories), 2 * synthetic.DIM)


def test_ridge_learns_the_rule_and_extrapolates():
    model, fitted = value.fit(TRAIN, VALIDATION, alpha=0.01, features="state_goal")
    assert fitted["validation_mse_fit_on_train"] < 0.05 and model.alpha == 0.01
    features, targets = value.labelled_rows(LARGER)
    predicted = model.estimate(features[:, : synthetic.DIM], features[:, synthetic.DIM :])
    assert np.abs(predicted - targets).max() < 0.5


def test_save_load_and_corrupt_files(tmp_path):
    model, _ = value.fit(TRAIN, VALIDATION, alpha=1.0, features="state")
    model.save(tmp_path)
    loaded = value.load(tmp_path)
    states, goals = TRAIN.trajectories[0], np.broadcast_to(TRAIN.goals[0], TRAIN.trajectories[0].shape)
    assert np.array_equal(loaded.estimate(states, goals), model.estimate(states, goals))
    assert value.load(tmp_path, synthetic.DIM).weights.shape == (2 * synthetic.DIM,)
    with pytest.raises(InputError, match=rf"weights of shape \({2 * synthetic.DIM},\), expected \(4,\)"):
        value.load(tmp_path, phi_dim=2)  # another run's embedding: refused at load, not when decoding
    (tmp_path / value.VALUE_FILE).write_bytes(b"")
    with pytest.raises(InputError, match="corrupt value model file"):
        value.load(tmp_path)
    with pytest.raises(InputError, match="no value model here"):
        value.load(tmp_path / "elsewhere")
    with pytest.raises(InputError, match="positive ridge strength"):
        value.fit(TRAIN, VALIDATION, alpha=0.0, features="state")
    with pytest.raises(InputError, match="value.features='goal'"):
        value.fit(TRAIN, VALIDATION, alpha=1.0, features="goal")


def test_a_run_with_a_value_model_loads_it(tmp_path, monkeypatch):
    monkeypatch.setattr(train, "load_encoder", synthetic.load_fake_encoder)
    config = small_config("xgb")
    config.value.kind = "ridge"
    config.value.features = "state_goal"  # the synthetic rule needs the goal
    synthetic.train_run(config, tmp_path)
    assert (tmp_path / value.VALUE_FILE).is_file()
    assert isinstance(train.load_model(tmp_path).cost_to_go, value.RidgeCostToGo)


@pytest.mark.parametrize(
    "settings,reason",
    [
        ({"embedding": "theirs"}, "value.embedding='theirs' is not one of model, own"),
        ({"embedding": "own", "wl_iterations": 0}, "value.wl_iterations=0 must be an integer >= 1"),
        ({"embedding": "own", "features": "state_goal"}, "reads φ\\(s\\) alone"),
        ({"embedding": "own", "wl_algorithm": "3wl"}, "value.wl_algorithm='3wl' is not one of wl, lwl2"),
        ({"embedding": "own", "wl_graph": "slg"}, "value.wl_graph='slg' is not one of ilg, ploig"),
        ({"goal_paths": -1}, "value.goal_paths=-1 must be an integer >= 0"),
        ({"goal_paths": True}, "value.goal_paths=True must be an integer >= 0"),
        ({"goal_paths": 4, "features": "state_goal"}, "value.goal_paths reads φ\\(s\\) alone"),
    ],
)
def test_bad_cost_to_go_embedding_settings_are_one_line(settings, reason):
    config = small_config("xgb")
    config.value.kind = "ridge"
    config.value.update(settings)
    with pytest.raises(InputError, match=reason):
        config_lib.check(config)


@pytest.mark.parametrize("settings", [{"embedding": "own"}, {"goal_paths": 4}])
def test_an_own_embedding_or_goal_paths_need_their_data(settings):
    config = small_config("xgb")
    config.value.kind = "ridge"
    config.value.update(settings)
    with pytest.raises(InputError, match="needs its data"):
        train.fit_cost_to_go(config, TRAIN, VALIDATION, None)


def _ridge_of_earlier_runs(features, targets, alpha):
    """The dense solve as earlier runs did it (weights, bias)."""
    mean_x, mean_y = features.mean(axis=0), targets.mean()
    centred = features - mean_x
    weights = np.linalg.solve(centred.T @ centred + alpha * np.eye(centred.shape[1]), centred.T @ (targets - mean_y))
    return weights, float(mean_y - mean_x @ weights)


def test_dense_rows_below_the_threshold_give_the_weights_of_earlier_runs_bit_for_bit():
    assert 2 * synthetic.DIM <= value.SPARSE_ABOVE
    for features in value.FEATURES:
        model, _ = value.fit(TRAIN, VALIDATION, alpha=3.0, features=features)
        rows = [value.labelled_rows(split, features) for split in (TRAIN, VALIDATION)]
        x, y = np.concatenate([r[0] for r in rows]), np.concatenate([r[1] for r in rows])
        weights, bias = _ridge_of_earlier_runs(x, y, 3.0)
        assert np.array_equal(model.weights, weights) and model.bias == bias


@pytest.mark.parametrize("shape", [(12, 40), (40, 12)])  # more features than rows (dual form), fewer
def test_sparse_ridge_gives_the_weights_of_the_dense_ridge(shape):
    rng = np.random.default_rng(0)
    features = rng.poisson(0.5, size=shape).astype(np.float64)
    features[:, 3] += 7.0  # a colour every state has: centring matters
    targets = rng.normal(size=shape[0])
    dense = value._ridge(features, targets, 3.0)
    sparse = value._sparse_ridge(scipy.sparse.csr_array(features), targets, 3.0)
    np.testing.assert_allclose(sparse.weights, dense.weights, rtol=1e-8, atol=1e-10)
    assert sparse.bias == pytest.approx(dense.bias)


@pytest.mark.parametrize("features", value.FEATURES)
def test_above_the_threshold_rows_stay_sparse_and_fit_the_same_model(features, monkeypatch):
    dense, dense_fitted = value.fit(TRAIN, VALIDATION, alpha=3.0, features=features)
    monkeypatch.setattr(value, "SPARSE_ABOVE", 2 * synthetic.DIM - 1)
    rows, targets = value.labelled_rows(TRAIN, features, sparse=True)
    assert scipy.sparse.issparse(rows)
    assert np.array_equal(rows.toarray(), value.labelled_rows(TRAIN, features)[0])
    assert np.array_equal(targets, value.labelled_rows(TRAIN, features)[1])
    sparse, sparse_fitted = value.fit(TRAIN, VALIDATION, alpha=3.0, features=features)
    np.testing.assert_allclose(sparse.weights, dense.weights, rtol=1e-8, atol=1e-10)
    assert sparse.bias == pytest.approx(dense.bias)
    held_out = "validation_mse_fit_on_train"
    assert sparse_fitted[held_out] == pytest.approx(dense_fitted[held_out])


@pytest.mark.parametrize("phi_alone", [False, True])
def test_wide_rows_estimate_as_the_dense_rows(phi_alone, monkeypatch):
    model, _ = value.fit(TRAIN, VALIDATION, alpha=0.01, features="state_goal")
    if phi_alone:  # an own φ: φ(g) unread
        model.encoder = synthetic.FakeEncoder()
    features, _ = value.labelled_rows(LARGER)
    states, goals = features[:, : synthetic.DIM], features[:, synthetic.DIM :]
    dense = model.estimate(states, goals)
    monkeypatch.setattr(value, "SPARSE_ABOVE", 2 * synthetic.DIM - 1)
    wide = model.estimate(states, goals)
    np.testing.assert_allclose(wide, dense, rtol=1e-6, atol=1e-6)
    assert not phi_alone or np.array_equal(wide, model.estimate(states, np.full_like(goals, np.nan)))  # unread


@pytest.mark.parametrize("wide", [False, True])
def test_unclipped_estimates_keep_their_order_below_zero(wide, monkeypatch):
    """Clipped, every estimate below zero reads as zero and ties; unclipped, the same estimates keep their
    order (decode.clip_cost_to_go, through `evaluation.cost_to_go_for`)."""
    if wide:
        monkeypatch.setattr(value, "SPARSE_ABOVE", 2 * synthetic.DIM - 1)
    model = value.RidgeCostToGo(np.concatenate([np.ones(synthetic.DIM), np.zeros(synthetic.DIM)]), -100.0, 1.0)
    states = np.arange(3 * synthetic.DIM, dtype=np.float32).reshape(3, synthetic.DIM) / synthetic.DIM
    raw = states.sum(axis=1) - 100.0
    assert (raw < 0).all() and len(set(raw.tolist())) == 3
    goals = np.zeros_like(states)
    np.testing.assert_array_equal(model.estimate(states, goals), np.zeros(3, np.float32))
    loaded = types.SimpleNamespace(cost_to_go=model)
    unclipped = evaluation.cost_to_go_for(loaded, DecodeConfig(strategy="best_first", clip_cost_to_go=False))
    np.testing.assert_allclose(unclipped.estimate(states, goals), raw, rtol=1e-6)
    assert evaluation.cost_to_go_for(loaded, DecodeConfig(strategy="best_first")) is model
    # results stored before the setting existed keep their key; unclipped ones get another
    assert "clip_cost_to_go" not in DecodeConfig().identity()
    assert DecodeConfig(clip_cost_to_go=False).identity()["clip_cost_to_go"] is False
