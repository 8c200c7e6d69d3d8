"""Best-first search with `prune_dead_ends`: a dead end that the cost-to-go ranks first is closed unexpanded."""

import numpy as np
import pytest

from statecentric_jax.errors import InputError
from statecentric_jax.planning.tasks import load_task
from statecentric_jax.search.base import DecodeConfig
from statecentric_jax.search.decoding import decode
from tests.planning.one_way import ONE_WAY_DOMAIN, one_way_problem
from tests.search.test_strategies import FixedTargetModel, ReadsModelEmbedding

PLACES = ("a", "c", "d", "e", "x", "goal")
LURE = {"a": 3.0, "c": 0.0, "d": 0.0, "e": 0.0, "x": 1.0, "goal": 0.0}  # the dead ends look closest to the goal


class PlaceEncoder:
    """One dimension per place: where the car is."""

    dim = len(PLACES)

    def embed(self, pairs, parents=None):
        return np.asarray([[f"(at {place})" in state for place in PLACES] for _, state in pairs], np.float32)

    def embed_goals(self, tasks):
        return self.embed([(task, task.goal) for task in tasks])


class LureCostToGo(ReadsModelEmbedding):
    """Lazy search estimates a node when it expands it; its children are taken in operator order, (drive a c) first."""

    def estimate(self, states, goals):
        return np.asarray(states) @ np.asarray([LURE[place] for place in PLACES], np.float32)


def decode_from(tmp_path, start, prune, strategy="best_first"):
    (tmp_path / "domain.pddl").write_text(ONE_WAY_DOMAIN)
    (tmp_path / f"{start}.pddl").write_text(one_way_problem(start))
    task = load_task(tmp_path / "domain.pddl", tmp_path / f"{start}.pddl")
    encoder = PlaceEncoder()
    config = DecodeConfig(strategy=strategy, metric="euclidean", prune_dead_ends=prune)
    return decode([task], FixedTargetModel(encoder.dim, seed=0), encoder, config, cost_to_go=LureCostToGo())[0]


@pytest.mark.parametrize("strategy", ["best_first", "lazy_best_first"])
def test_the_lure_is_closed_unexpanded_and_the_plan_stays(tmp_path, strategy):
    lured, pruned = (decode_from(tmp_path, "a", prune, strategy) for prune in (False, True))
    assert lured.plan == pruned.plan == ["(drive a x)", "(drive x goal)"]
    assert (lured.expanded, pruned.expanded) == (5, 2)  # a, c, d, e, x against a, x


def test_a_dead_root_ends_at_once(tmp_path):
    result = decode_from(tmp_path, "c", prune=True)
    assert (result.outcome, result.expanded, result.solved) == ("dead end", 0, False)


def test_only_best_first_strategies_take_it():
    with pytest.raises(InputError, match="decode.prune_dead_ends closes nodes of best-first search, not of 'beam'"):
        DecodeConfig(prune_dead_ends=True)
    assert "prune_dead_ends" not in DecodeConfig(strategy="best_first").identity()
    assert DecodeConfig(strategy="best_first", prune_dead_ends=True).identity()["prune_dead_ends"] is True
