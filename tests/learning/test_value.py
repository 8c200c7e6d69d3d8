"""The learned cost-to-go: fits remaining steps, generalises on a linear rule, saves and loads."""

import numpy as np
import pytest

from statecentric_jax import config as config_lib
from statecentric_jax.errors import InputError
from statecentric_jax.learning import train, value
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


def test_ridge_over_the_rows_gives_the_weights_of_the_ridge_over_the_features(monkeypatch):
    rng = np.random.default_rng(0)
    features, targets = rng.poisson(1.0, size=(12, 40)).astype(np.float64), rng.normal(size=12)
    primal = value._ridge(features, targets, 3.0)
    monkeypatch.setattr(value, "DUAL_ABOVE", 10)
    dual = value._ridge(features, targets, 3.0)
    np.testing.assert_allclose(dual.weights, primal.weights, rtol=1e-8, atol=1e-10)
    assert dual.bias == pytest.approx(primal.bias)
