"""Synthetic embedded splits with a learnable rule, a stand-in encoder, and small runs trained on them,
for model tests.

States are count vectors (like WL histograms); each step adds one to the
coordinate where the goal is furthest ahead, until the state equals the goal.
"""

import json
import os

import ml_collections
import numpy as np

from statecentric_jax import config as config_lib
from statecentric_jax.embedding.datasets import EmbeddedSplit
from statecentric_jax.learning import train

DIM = 6


def trajectory(goal: np.ndarray) -> np.ndarray:
    state = np.zeros_like(goal)
    states = [state]
    while (state != goal).any():
        state = state.copy()
        state[np.argmax(goal - state)] += 1
        states.append(state)
    return np.stack(states)


def split(name: str, problems: int, seed: int, domain: str = "toy", encoding: str = "wl"):
    """`problems` random goals and their trajectories from the zero state."""
    rng = np.random.default_rng(seed)
    goals = rng.integers(0, 4, size=(problems, DIM)).astype(np.float32)
    goals[:, 0] = np.maximum(goals[:, 0], 1)  # no empty plan (one test adds its own)
    return EmbeddedSplit(
        domain=domain,
        encoding=encoding,
        split=name,
        problems=[f"p{i:02d}" for i in range(problems)],
        trajectories=[trajectory(g) for g in goals],
        goals=goals,
        num_objects=[DIM] * problems,
    )


class FakeEncoder:
    """What training and loading need from an encoder: identity, dimension, save."""

    def __init__(self, domain: str = "toy", kind: str = "wl", dim: int = DIM):
        self.domain, self.kind, self.dim = domain, kind, dim

    def save(self, path) -> None:
        with open(path, "w") as f:
            json.dump({"domain": self.domain, "kind": self.kind, "dim": self.dim}, f)


def load_fake_encoder(path, domain=None, kind=None) -> FakeEncoder:
    with open(path) as f:
        data = json.load(f)
    assert (domain, kind) == (data["domain"], data["kind"])
    return FakeEncoder(**data)


TRAIN = split("train", 8, seed=0)
VALIDATION = split("validation", 3, seed=1)
MODEL_TRAIN = split("train", 10, seed=0)  # for the models' own tests: a little more to learn from
MODEL_VALIDATION = split("validation", 4, seed=1)


def model_settings() -> ml_collections.ConfigDict:
    """A config whose `lstm` and `xgb` sections fit MODEL_TRAIN in seconds."""
    config = config_lib.base()
    config.lstm.hidden = 16
    config.lstm.layers = 2
    config.lstm.batch_size = 4
    config.lstm.epochs = 30
    config.xgb.max_depth = 3
    config.xgb.rounds = 40
    config.xgb.n_jobs = 1
    return config


def small_config(kind: str, mode: str = "delta") -> ml_collections.ConfigDict:
    """A Table 1 config for the synthetic "toy" domain with small models: seconds to train."""
    config = config_lib.table1("blocks", "wl", kind, mode)
    config.data.domain = "toy"
    config.lstm.hidden, config.lstm.epochs, config.lstm.batch_size = 8, 4, 4
    config.xgb.max_depth, config.xgb.rounds, config.xgb.n_jobs = 3, 8, 1
    return config


def train_run(config: ml_collections.ConfigDict, workdir: str | os.PathLike) -> train.TrainResult:
    """`config` trained on TRAIN, selected on VALIDATION, into `workdir` (load it with `load_fake_encoder`
    in place of `train.load_encoder`)."""
    return train.train_model(config, TRAIN, VALIDATION, FakeEncoder("toy"), workdir)
