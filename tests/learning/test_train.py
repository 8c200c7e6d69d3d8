"""Training into a workdir and loading it back: files, selection, refusals."""

import json
import pathlib

import jax
import numpy as np
import pytest

from statecentric_jax.errors import InputError
from statecentric_jax.learning import lstm, train, transitions, xgb
from tests import synthetic
from tests.synthetic import TRAIN, VALIDATION, small_config

REPO = pathlib.Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def fake_encoder_files(monkeypatch):
    monkeypatch.setattr(train, "load_encoder", synthetic.load_fake_encoder)


@pytest.fixture(scope="module", params=["lstm", "xgb"])
def trained(request, tmp_path_factory):
    workdir = tmp_path_factory.mktemp(request.param)
    return synthetic.train_run(small_config(request.param), workdir), workdir


def validation_mse(model):
    features, target = xgb.rows(VALIDATION, "delta")
    states, goals = features[:, : synthetic.DIM], features[:, synthetic.DIM :]
    if model.kind == "xgb":
        predicted, _ = model.predict_next(states, goals, None)
        return float(np.mean((predicted - (states + target)) ** 2))
    pairs = transitions.sequences(VALIDATION.trajectories, VALIDATION.goals, "delta")
    module = lstm.TransitionLSTM(model.dim, model.hidden, model.layers, "delta")
    return float(lstm.batch_loss(module, model.params, *lstm.pad_split(pairs)))


def test_workdir_holds_everything_and_loads_the_selected_model(trained):
    result, workdir = trained
    names = {p.name for p in workdir.iterdir()}
    assert {"config.json", "checkpoint", "encoder.json", "metrics.jsonl", "model_size.json"} <= names
    metrics = [json.loads(line) for line in (workdir / "metrics.jsonl").read_text().splitlines()]
    assert [row["step"] for row in metrics] == list(range(1, result.steps + 1))
    size = json.loads((workdir / "model_size.json").read_text())
    assert size["kind"] == result.kind and size["dim"] == synthetic.DIM
    assert size["parameters" if result.kind == "lstm" else "nodes"] > 0

    loaded = train.load_model(workdir, domain="toy", encoding="wl")
    assert loaded.config.to_dict() == small_config(result.kind).to_dict()
    assert loaded.encoder.dim == loaded.model.dim == synthetic.DIM
    np.testing.assert_allclose(validation_mse(loaded.model), result.best_validation_loss, rtol=1e-4)


def test_wrong_domain_or_encoding_is_refused(trained):
    _, workdir = trained
    with pytest.raises(InputError, match="trained for domain 'toy', not 'blocks'"):
        train.load_model(workdir, domain="blocks")
    with pytest.raises(InputError, match="trained for encoding 'wl', not 'fsf'"):
        train.load_model(workdir, encoding="fsf")


def test_missing_or_corrupt_files_are_refused(tmp_path, trained):
    with pytest.raises(InputError, match="no config.json"):
        train.load_model(tmp_path)
    result, workdir = trained
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "config.json").write_text((workdir / "config.json").read_text())
    (broken / "encoder.json").write_text((workdir / "encoder.json").read_text())
    with pytest.raises(InputError, match="not found"):
        train.load_model(broken)
    (broken / "checkpoint").mkdir()
    if result.kind == "xgb":
        (broken / "checkpoint" / "model.ubj").write_bytes(b"not a model")
    else:
        for src in (workdir / "checkpoint").rglob("*"):
            dst = broken / "checkpoint" / src.relative_to(workdir / "checkpoint")
            dst.mkdir(exist_ok=True) if src.is_dir() else dst.write_bytes(b"\0" * src.stat().st_size)
    with pytest.raises(InputError, match="corrupt"):
        train.load_model(broken)
    if result.kind == "xgb":  # an empty file used to abort the process inside XGBoost
        (broken / "checkpoint" / "model.ubj").write_bytes(b"")
        with pytest.raises(InputError, match="empty file"):
            train.load_model(broken)
    (broken / "config.json").write_text("{not json")
    with pytest.raises(InputError, match="corrupt config"):
        train.load_model(broken)
    (broken / "config.json").write_text(
        (workdir / "config.json").read_text().replace(f'"kind": "{result.kind}"', '"kind": "transformer"')
    )
    with pytest.raises(InputError, match="config.json: config model.kind='transformer'"):
        train.load_model(broken)


def test_data_of_another_domain_or_dimension_is_refused(tmp_path):
    config = small_config("xgb")
    with pytest.raises(InputError, match="config wants toy/wl"):
        train.train_model(
            config, synthetic.split("train", 2, 0, domain="gripper"), VALIDATION, synthetic.FakeEncoder(), tmp_path
        )
    with pytest.raises(InputError, match="dimension"):
        train.train_model(config, TRAIN, VALIDATION, synthetic.FakeEncoder(dim=9), tmp_path)
    config.model.mode = "residual"
    with pytest.raises(InputError, match="model.mode='residual'"):
        train.train_model(config, TRAIN, VALIDATION, synthetic.FakeEncoder(), tmp_path)


@pytest.mark.parametrize("kind", ["lstm", "xgb"])
def test_seeds_trained_in_one_go_match_training_alone(kind, tmp_path):
    config = small_config(kind)
    results = train.train_models(
        config, TRAIN, VALIDATION, synthetic.FakeEncoder("toy"), {s: tmp_path / f"seed{s}" for s in (13, 14)}
    )
    alone = train.train_model(
        _seeded(kind, 14),
        TRAIN,
        VALIDATION,
        synthetic.FakeEncoder("toy"),
        tmp_path / "alone",
    )
    np.testing.assert_allclose(results[1].best_validation_loss, alone.best_validation_loss, rtol=1e-4)
    key = "trained_together_seeds" if kind == "lstm" else "trained_once_for_seeds"
    for seed in (13, 14):
        assert json.loads((tmp_path / f"seed{seed}" / train.TRAINING_FILE).read_text())[key] == [13, 14]
        assert train.read_config(tmp_path / f"seed{seed}").seed == seed
    same = results[0].best_validation_loss == results[1].best_validation_loss
    assert same == (kind == "xgb")  # XGBoost ignores the seed: one model for both


def _seeded(kind, seed):
    config = small_config(kind)
    config.seed = seed
    return config


@pytest.mark.parametrize("kind", ["lstm", "xgb"])
def test_same_seed_and_data_give_the_same_model_on_rerun(kind, tmp_path):
    for run in ("a", "b"):
        train.train_models(small_config(kind), TRAIN, VALIDATION, synthetic.FakeEncoder("toy"), {13: tmp_path / run})
    for name in ("metrics.jsonl", "model_size.json", "config.json"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()
    if kind == "xgb":
        model = f"checkpoint/{xgb.MODEL_FILE}"
        assert (tmp_path / "a" / model).read_bytes() == (tmp_path / "b" / model).read_bytes()
    else:  # orbax names its files at random and stamps its metadata with the time: compare the arrays
        a, b = (train.load_model(tmp_path / run).model.params for run in ("a", "b"))
        for x, y in zip(jax.tree_util.tree_leaves(a), jax.tree_util.tree_leaves(b), strict=True):
            assert np.array_equal(x, y)
