"""Ensembles: one predict_next that averages the members, saved as references to trained runs."""

import dataclasses
import json
import pathlib

import ml_collections
import numpy as np
import pytest

from statecentric_jax import config as config_lib
from statecentric_jax.errors import InputError
from statecentric_jax.learning import config as learning_config
from statecentric_jax.learning import ensemble, train
from statecentric_jax.planning.tasks import load_task
from statecentric_jax.search.base import DecodeConfig
from statecentric_jax.search.decoding import decode
from tests import synthetic
from tests.search.blocks import DOMAIN, PLANS, PROBLEMS, AtomEncoder, OracleModel, problem
from tests.synthetic import TRAIN, small_config


def _trained(tmp_path, monkeypatch, depths=(2, 3)):
    monkeypatch.setattr(train, "load_encoder", synthetic.load_fake_encoder)
    workdirs = []
    for depth in depths:
        config = small_config("xgb")
        config.xgb.max_depth = depth  # so that the members differ
        workdir = tmp_path / f"depth{depth}"
        synthetic.train_run(config, workdir)
        workdirs.append(workdir)
    return workdirs


def test_predict_next_is_the_members_mean(tmp_path, monkeypatch):
    model, first = ensemble.from_workdirs(_trained(tmp_path, monkeypatch))
    states = TRAIN.trajectories[0][:-1]
    goals = np.broadcast_to(TRAIN.goals[0], states.shape)
    carry = model.init_carry(len(states))
    predicted, new_carry = model.predict_next(states, goals, carry)
    singles = [m.predict_next(states, goals, c)[0] for m, c in zip(model.members, carry)]
    assert not np.allclose(singles[0], singles[1])
    np.testing.assert_allclose(predicted, np.mean(singles, axis=0), rtol=1e-6)
    assert len(new_carry) == 2 and model.dim == first.model.dim and model.mode == first.model.mode
    assert model.size()["members"] == 2
    assert model.size()["trees"] == sum(m.size()["trees"] for m in model.members)


def test_save_load_and_bad_files(tmp_path, monkeypatch):
    model, _ = ensemble.from_workdirs(_trained(tmp_path, monkeypatch))
    model.save(tmp_path / "ens")
    loaded, _ = ensemble.load(tmp_path / "ens")
    states = TRAIN.trajectories[1]
    goals = np.broadcast_to(TRAIN.goals[1], states.shape)
    np.testing.assert_array_equal(
        loaded.predict_next(states, goals, loaded.init_carry(len(states)))[0],
        model.predict_next(states, goals, model.init_carry(len(states)))[0],
    )
    (tmp_path / "ens" / ensemble.ENSEMBLE_FILE).write_text("{not json")
    with pytest.raises(InputError, match="corrupt ensemble file"):
        ensemble.load(tmp_path / "ens")
    with pytest.raises(InputError, match="no ensemble here"):
        ensemble.load(tmp_path / "elsewhere")


def test_members_must_agree_on_width(tmp_path, monkeypatch):
    model, _ = ensemble.from_workdirs(_trained(tmp_path, monkeypatch, depths=(3,)))
    narrower = dataclasses.replace(model.members[0], dim=model.dim - 1)
    with pytest.raises(InputError, match="embedding width"):
        ensemble.EnsembleModel([model.members[0], narrower])
    with pytest.raises(InputError, match="at least one member"):
        ensemble.EnsembleModel([])


class _SizedOracle(OracleModel):
    dim, mode = 0, "state"  # the decoder never reads dim; the ensemble only checks members agree

    def size(self):
        return {}


@pytest.mark.parametrize("strategy", ["beam", "best_first"])
def test_an_ensemble_of_oracles_decodes_their_plans(tmp_path, strategy):
    """Each member's carry (a step counter) must follow its node through the search, or the plans break."""
    (tmp_path / "domain.pddl").write_text(DOMAIN)
    tasks = []
    for name, (blocks, goal) in PROBLEMS.items():
        (tmp_path / f"{name}.pddl").write_text(problem(name, blocks, goal))
        tasks.append(load_task(tmp_path / "domain.pddl", tmp_path / f"{name}.pddl"))
    encoder = AtomEncoder()
    oracle = _SizedOracle(encoder, tasks, {t.name: PLANS[t.name] for t in tasks})
    model = ensemble.EnsembleModel([oracle, oracle])
    results = decode(tasks, model, encoder, DecodeConfig(strategy=strategy, beam_width=2, metric="euclidean"))
    assert [r.plan for r in results] == [PLANS[t.name] for t in tasks]


def test_members_inside_the_folder_are_named_relative_to_it(tmp_path, monkeypatch):
    workdirs = _trained(tmp_path / "a", monkeypatch)
    ensemble.write(tmp_path / "a", [workdirs[0], tmp_path / "a" / "depth3"])
    stored = json.loads((tmp_path / "a" / ensemble.ENSEMBLE_FILE).read_text())
    assert stored["members"] == ["depth2", "depth3"]
    (tmp_path / "a").rename(tmp_path / "b")  # the folder moves with its members
    loaded = ensemble.load_run(tmp_path / "b")
    assert isinstance(loaded.model, ensemble.EnsembleModel) and len(loaded.model.members) == 2
    assert [pathlib.Path(d).name for d in loaded.member_dirs] == ["depth2", "depth3"]
    assert loaded.config.xgb.max_depth == 2  # the first member's config decodes
    single = ensemble.load_run(tmp_path / "b" / "depth3")  # no ensemble.json: the run's own model
    assert single.model.kind == "xgb" and single.member_dirs == ()


@pytest.mark.parametrize(
    "members, rounds, reason",
    [
        ("lstm:stat", 0, "'lstm:stat' is not kind:mode"),
        ("transformer:state", 0, "'transformer:state' is not kind:mode"),
        ("xgb:delta", 0, "'xgb:delta' is already in the ensemble"),
        ("lstm:state, lstm:state", 0, "'lstm:state' is already in the ensemble"),
        ("lstm:state", 1, "not combined with aggregation"),
    ],
)
def test_bad_ensemble_members_are_refused(members, rounds, reason):
    config = config_lib.table1("blocks", "wl", "xgb", "delta")
    config.ensemble.members = members
    config.aggregation.rounds = rounds
    with pytest.raises(InputError, match=f"config ensemble.members=.*: {reason}"):
        config_lib.check(config)


def test_ensembles_are_off_in_the_papers_configs():
    for kind in learning_config.MODEL_KINDS:
        assert learning_config.ensemble_members(config_lib.table1("blocks", "wl", kind, "state")) == []
    old = json.loads(config_lib.base().to_json())
    del old["ensemble"]  # a run trained before ensembles existed
    assert learning_config.ensemble_members(ml_collections.ConfigDict(config_lib.with_defaults(old))) == []
    config = config_lib.table1("blocks", "wl", "xgb", "delta")
    config.ensemble.members = " lstm:state ,xgb:state"
    member = learning_config.ensemble_member(config, "lstm", "state")
    assert learning_config.ensemble_members(config) == [("lstm", "state"), ("xgb", "state")]
    assert (member.model.kind, member.model.mode, member.ensemble.members) == ("lstm", "state", "")
    assert config.model.kind == "xgb"  # the run's own config is left as it was
