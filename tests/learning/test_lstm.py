"""The LSTM transition model: masking, the cell/scan identity, training, determinism, checkpoints."""

import logging
import os
import shutil
import subprocess
import sys
import types

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from statecentric_jax import config as config_lib
from statecentric_jax.learning import lstm, transitions
from tests import synthetic
from tests.launching import REPO
from tests.synthetic import MODEL_TRAIN as TRAIN
from tests.synthetic import MODEL_VALIDATION as VALIDATION


def _params(mode, dim=synthetic.DIM, hidden=16, seed=0):
    settings = synthetic.model_settings().lstm
    settings.hidden = hidden
    return lstm.init_params(dim, settings, mode, seed)


@pytest.mark.parametrize("mode", transitions.MODES)
def test_padding_does_not_change_loss(mode):
    pairs = transitions.sequences(TRAIN.trajectories[:3], TRAIN.goals[:3], mode)
    module = lstm.TransitionLSTM(synthetic.DIM, 16, 2, mode)
    params = _params(mode)
    tight = lstm.pad_split(pairs)
    loss = lstm.batch_loss(module, params, *tight)
    inputs, targets, _mask = tight
    rows, length = inputs.shape[0] * 2, inputs.shape[1] * 2
    rng = np.random.default_rng(0)
    wide_inputs = rng.normal(size=(rows, length, inputs.shape[2])).astype(np.float32)  # garbage where masked
    wide_targets = rng.normal(size=(rows, length, targets.shape[2])).astype(np.float32)
    wide_mask = np.zeros((rows, length), np.float32)
    for i, (x, y) in enumerate(pairs):
        wide_inputs[i, : len(x)], wide_targets[i, : len(y)], wide_mask[i, : len(x)] = x, y, 1
    wide = lstm.batch_loss(module, params, wide_inputs, wide_targets, wide_mask)
    np.testing.assert_allclose(float(wide), float(loss), rtol=1e-5)
    # The mask matters: counting the padding changes the loss.
    unmasked = lstm.batch_loss(module, params, wide_inputs, wide_targets, np.ones_like(wide_mask))
    assert abs(float(unmasked) - float(loss)) > 1e-3


def test_split_is_padded_once_and_cut_into_batches_of_row_indices():
    pairs = transitions.sequences(TRAIN.trajectories, TRAIN.goals, "state")
    inputs, _targets, mask = lstm.pad_split(pairs)
    assert inputs.shape[:2] == (len(pairs) + 1, max(len(x) for x, _ in pairs))
    assert np.asarray(mask).sum() == sum(len(x) for x, _ in pairs) and not np.asarray(mask[-1]).any()
    order = np.random.default_rng(0).permutation(len(pairs))
    rows = lstm.batch_rows(order, 3)
    assert rows.shape == (-(-len(pairs) // 3), 3) and sorted(rows.ravel()[: len(pairs)]) == list(range(len(pairs)))
    assert (rows.ravel()[len(pairs) :] == len(pairs)).all()  # the last batch is filled with the padding row
    assert lstm.batch_rows(order, 4 * len(pairs)).shape == (1, len(pairs))  # no padding rows for a small split


def test_cosine_loss_is_zero_for_aligned_and_one_for_orthogonal():
    a = jnp.array([[1.0, 0.0], [1.0, 0.0]])
    b = jnp.array([[3.0, 0.0], [0.0, 2.0]])
    np.testing.assert_allclose(lstm.step_losses(a, b, "state"), [0.0, 1.0], atol=1e-6)
    np.testing.assert_allclose(lstm.step_losses(a, b, "delta"), [2.0, 2.5])


@pytest.mark.parametrize("mode", transitions.MODES)
def test_predict_next_step_by_step_reproduces_the_scan(mode):
    params = _params(mode)
    ((inputs, _),) = transitions.sequences(TRAIN.trajectories[:1], TRAIN.goals[:1], mode)
    module = lstm.TransitionLSTM(synthetic.DIM, 16, 2, mode)
    _, scanned = module.apply({"params": params}, lstm.zero_carry(1, 16, 2), inputs[None])
    model = lstm.LSTMModel(params, synthetic.DIM, 16, 2, mode)
    carry = model.init_carry(1)
    states, goal = inputs[:, : synthetic.DIM], inputs[:1, synthetic.DIM :]
    for t in range(len(inputs)):
        target, carry = model.predict_next(states[t : t + 1], goal, carry)
        expected = transitions.to_state_space(states[t], np.asarray(scanned[0, t]), mode)
        np.testing.assert_allclose(target[0], expected, rtol=1e-4, atol=1e-5)


def test_lstm_parameter_count_matches_the_paper_architecture():
    # Paper (PyTorch, two bias vectors per gate): blocks WL, D=172 -> 1,253,292. Flax's LSTM cell
    # has one bias per gate: 4 x 256 fewer per layer.
    settings = config_lib.base().lstm
    params = jax.eval_shape(lambda: lstm.init_params(172, settings, "state", 0))
    count = sum(x.size for x in jax.tree_util.tree_leaves(params))
    assert count == 1_253_292 - 2 * 4 * 256
    delta = jax.eval_shape(lambda: lstm.init_params(172, settings, "delta", 0))
    assert sum(x.size for x in jax.tree_util.tree_leaves(delta)) == count - (256 * 256 + 256) - 2 * 256


def _val_loss(model, mode):
    pairs = transitions.sequences(VALIDATION.trajectories, VALIDATION.goals, mode)
    module = lstm.TransitionLSTM(model.dim, model.hidden, model.layers, mode)
    return float(lstm.batch_loss(module, model.params, *lstm.pad_split(pairs)))


def test_a_batch_of_the_split_padded_once_has_the_loss_of_its_sequences_alone():
    pairs = transitions.sequences(TRAIN.trajectories, TRAIN.goals, "state")
    model = lstm.fit(TRAIN, VALIDATION, "state", _epochs(1), seed=0)[0]
    module = lstm.TransitionLSTM(model.dim, model.hidden, model.layers, "state")
    inputs, targets, mask = lstm.pad_split(pairs)
    assert inputs.shape[0] == len(pairs) + 1 and not np.asarray(mask[-1]).any()
    rows = np.array([3, 0, len(pairs)])  # a short last batch is filled with the padding row
    once = lstm.batch_loss(module, model.params, inputs[rows], targets[rows], mask[rows])
    alone = lstm.batch_loss(module, model.params, *(a[:2] for a in lstm.pad_split([pairs[3], pairs[0]])))
    np.testing.assert_allclose(float(once), float(alone), rtol=1e-5)


def _epochs(n):
    settings = synthetic.model_settings().lstm
    settings.epochs = n
    return settings


@pytest.mark.parametrize("mode", transitions.MODES)
def test_seeds_trained_together_equal_seeds_trained_alone(mode):
    together = lstm.fit_seeds(TRAIN, VALIDATION, mode, _epochs(4), [5, 6, 7])
    for seed, (model, history) in zip([5, 6, 7], together):
        alone, alone_history = lstm.fit(TRAIN, VALIDATION, mode, _epochs(4), seed)
        for a, b in zip(alone_history, history):
            assert a["step"] == b["step"]
            np.testing.assert_allclose(a["validation_loss"], b["validation_loss"], rtol=1e-4)
        leaves = jax.tree_util.tree_leaves
        for a, b in zip(leaves(alone.params), leaves(model.params)):
            np.testing.assert_allclose(a, b, rtol=1e-3, atol=1e-5)
    assert together[0][1] != together[1][1]  # the seeds differ


@pytest.mark.parametrize("mode", transitions.MODES)
def test_lstm_training_decreases_loss_and_keeps_best_epoch(mode):
    model, history = lstm.fit(TRAIN, VALIDATION, mode, synthetic.model_settings().lstm, seed=13)
    assert len(history) == 30
    assert history[-1]["train_loss"] < 0.7 * history[0]["train_loss"]
    best = min(row["validation_loss"] for row in history)
    np.testing.assert_allclose(_val_loss(model, mode), best, rtol=1e-4)


def test_lstm_same_seed_same_parameters():
    settings = synthetic.model_settings().lstm
    settings.epochs = 3
    a, history_a = lstm.fit(TRAIN, VALIDATION, "delta", settings, seed=5)
    b, history_b = lstm.fit(TRAIN, VALIDATION, "delta", settings, seed=5)
    c, _ = lstm.fit(TRAIN, VALIDATION, "delta", settings, seed=6)
    leaves = jax.tree_util.tree_leaves
    assert history_a == history_b
    assert all(np.array_equal(x, y) for x, y in zip(leaves(a.params), leaves(b.params)))
    assert not all(np.array_equal(x, y) for x, y in zip(leaves(a.params), leaves(c.params)))


_INIT_DIGEST = """
import hashlib, jax, numpy as np
from statecentric_jax import config
from statecentric_jax.learning import lstm
params = lstm.init_params(172, config.base().lstm, "state", 13)
print(hashlib.sha256(b"".join(np.asarray(x).tobytes() for x in jax.tree_util.tree_leaves(params))).hexdigest())
"""


def test_lstm_initialisation_does_not_depend_on_the_blas_thread_count():
    """The orthogonal kernels' QR runs in OpenBLAS, whose rounding differs between one and two threads at
    the paper's sizes; `launch/sweep.py --parallel` changes that count, and so did the trained models."""

    def digest(threads: str) -> str:
        env = {**os.environ, "OMP_NUM_THREADS": threads, "OPENBLAS_NUM_THREADS": threads}
        done = subprocess.run([sys.executable, "-c", _INIT_DIGEST], env=env, capture_output=True, text=True)
        assert done.returncode == 0, done.stderr[-2000:]
        return done.stdout.strip()

    assert digest("1") == digest("2")


@pytest.mark.parametrize("damage", ["truncate", "garbage"])
def test_corrupt_lstm_checkpoint_is_one_short_line(tmp_path, damage):
    settings = synthetic.model_settings().lstm
    model = lstm.LSTMModel(lstm.init_params(synthetic.DIM, settings, "delta", 0), synthetic.DIM, 16, 2, "delta")
    model.save(tmp_path / "ckpt")
    for path in (tmp_path / "ckpt").rglob("*"):
        if path.is_file() and path.stat().st_size > 0 and "metadata" not in path.name:
            path.write_bytes(b"" if damage == "truncate" else b"\x00garbage" * 3)
    with pytest.raises(lstm.InputError) as info:
        lstm.load(tmp_path / "ckpt", synthetic.DIM, "delta", settings)
    assert len(str(info.value)) < 300 and "\n" not in str(info.value) and "tensorstore" not in str(info.value).lower()


def test_after_a_failed_restore_only_the_reads_it_left_behind_stay_silent(tmp_path, monkeypatch):
    settings = synthetic.model_settings().lstm
    model = lstm.LSTMModel(lstm.init_params(synthetic.DIM, settings, "delta", 0), synthetic.DIM, 16, 2, "delta")
    model.save(tmp_path / "ckpt")
    (tmp_path / "ckpt" / "manifest.ocdbt").write_bytes(b"\x00garbage" * 3)
    reported: list[object] = []
    monkeypatch.setattr(sys, "unraisablehook", reported.append)
    with pytest.raises(lstm.InputError):
        lstm.load(tmp_path / "ckpt", synthetic.DIM, "delta", settings)
    stray, other = RuntimeError("Event loop is closed"), RuntimeError("something else")
    for error in (stray, other):
        sys.unraisablehook(types.SimpleNamespace(exc_value=error))
    assert [r.exc_value for r in reported] == [other]
    never_retrieved = logging.LogRecord(
        "asyncio", logging.ERROR, "", 0, "Future exception was never retrieved", (), None
    )
    assert not all(f.filter(never_retrieved) for f in logging.getLogger("asyncio").filters)


LOAD = """
import sys, ml_collections
from statecentric_jax.errors import InputError
from statecentric_jax.learning import lstm
directory, action, hidden = sys.argv[1], sys.argv[2], int(sys.argv[3])
settings = ml_collections.ConfigDict({"hidden": hidden, "layers": 1})
if action == "save":
    lstm.LSTMModel(lstm.init_params(5, settings, "delta", 0), 5, hidden, 1, "delta").save(directory)
else:
    try:
        lstm.load(directory, 5, "delta", settings)
    except InputError as e:
        print(f"error: {e}", file=sys.stderr)
        sys.exit(2)
"""


def _load_in_a_process(*args):
    return subprocess.run([sys.executable, "-c", LOAD, *map(str, args)], capture_output=True, text=True, cwd=REPO)


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    directory = tmp_path_factory.mktemp("lstm") / "checkpoint"
    assert _load_in_a_process(directory, "save", 8).returncode == 0
    return directory


def test_another_hidden_size_is_refused_before_restoring(checkpoint):
    proc = _load_in_a_process(checkpoint, "load", 16)
    assert proc.returncode == 2 and proc.stderr == (
        f"error: {checkpoint}: not a checkpoint of this model: ['lstm_0']['hf']['bias'] has shape (8,),"
        " expected (16,) (config lstm.hidden, lstm.layers or the encoder changed?)\n"
    )


def test_garbage_in_the_manifest_is_the_only_line(checkpoint, tmp_path):
    bad = tmp_path / "checkpoint"
    shutil.copytree(checkpoint, bad)
    (bad / "manifest.ocdbt").write_bytes(bytes(range(256)) * 3)
    proc = _load_in_a_process(bad, "load", 8)
    assert (
        proc.returncode == 2 and proc.stderr == f"error: {bad}: corrupt LSTM checkpoint (its metadata cannot be read)\n"
    )
    assert _load_in_a_process(checkpoint, "load", 8).returncode == 0
