"""What every transition model does: targets (next states or deltas), checkpoints that load back identically."""

import jax
import numpy as np

from statecentric_jax.learning import lstm, transitions, xgb
from tests import synthetic
from tests.synthetic import MODEL_TRAIN as TRAIN
from tests.synthetic import MODEL_VALIDATION as VALIDATION


def test_targets_are_next_states_or_deltas():
    traj = np.array([[0, 0], [1, 0], [1, 2]], np.float32)
    np.testing.assert_array_equal(transitions.targets(traj, "state"), [[1, 0], [1, 2]])
    np.testing.assert_array_equal(transitions.targets(traj, "delta"), [[1, 0], [0, 2]])
    goal = np.array([5, 6], np.float32)
    ((inputs, delta),) = transitions.sequences([traj, traj[:1]], np.stack([goal, goal]), "delta")  # T=0 dropped
    np.testing.assert_array_equal(inputs, [[0, 0, 5, 6], [1, 0, 5, 6]])
    np.testing.assert_array_equal(transitions.to_state_space(inputs[:, :2], delta, "delta"), traj[1:])
    np.testing.assert_array_equal(transitions.to_state_space(inputs[:, :2], traj[1:], "state"), traj[1:])


def test_checkpoints_round_trip_to_identical_predictions(tmp_path):
    settings = synthetic.model_settings()
    settings.lstm.epochs = 2
    features, _ = xgb.rows(VALIDATION, "delta")
    states, goals = features[:, : synthetic.DIM], features[:, synthetic.DIM :]
    for kind, module in (("lstm", lstm), ("xgb", xgb)):
        model, _ = module.fit(TRAIN, VALIDATION, "delta", settings[kind], seed=13)
        model.save(tmp_path / kind)
        loaded = module.load(tmp_path / kind, synthetic.DIM, "delta", settings[kind])
        expected, expected_carry = model.predict_next(states, goals, model.init_carry(len(states)))
        got, got_carry = loaded.predict_next(states, goals, loaded.init_carry(len(states)))
        np.testing.assert_array_equal(got, expected)
        assert loaded.size() == model.size()
        for x, y in zip(jax.tree_util.tree_leaves(got_carry), jax.tree_util.tree_leaves(expected_carry)):
            np.testing.assert_array_equal(x, y)
