"""A learned cost-to-go: remaining plan length from the state and goal embeddings.

The expert trajectories already label every state s_t of a plan of length T with its
remaining steps T - t. A ridge regression fits them on the training and validation
states (linear models over WL features generalise to larger problems, as WL-GOOSE found
for heuristics). Features: φ(s) alone (`state`: the WL graph of a state already marks
which goal atoms hold), or [φ(s), φ(g)] (`state_goal`). Best-first decoding uses it as
its priority, with the transition model's distance breaking ties (`search/strategies.py`).
The ridge strength is a setting: validation error picks tiny strengths that search badly
on larger problems, so it is selected by search success (`benchmarks/generalization.py`).

φ is the transition model's embedding, or (`value.embedding=own`) a WL embedding of the
cost-to-go's own, with other iterations or hashing (`ValueData`): a heuristic may need finer
features than a next-state predictor. Decoding then embeds each new state once more, for it.
Its colours come from the training plans, or (`value.wl_vocabulary=fitted`) from every state it
is fitted on, aggregated ones too (`experiments/aggregation.py`): finer colours need more states.

On disk: `<workdir>/value.npz` with `weights` [2D] (zeros on φ(g) for `state`), `bias`,
`alpha` and `format`; with an own embedding also `<workdir>/value_encoder.json`, its encoder.
"""

from __future__ import annotations

import dataclasses
import os
import pathlib
import zipfile
from collections.abc import Sequence
from typing import Literal, get_args

import numpy as np

from statecentric_jax.atomic import replace_atomically
from statecentric_jax.embedding.datasets import EmbeddedSplit
from statecentric_jax.embedding.encoders import Encoder, Pair, load_encoder
from statecentric_jax.errors import InputError

VALUE_FILE = "value.npz"
ENCODER_FILE = "value_encoder.json"
_FORMAT = 1


Features = Literal["state", "state_goal"]
FEATURES: tuple[str, ...] = get_args(Features)


def labelled_rows(split: EmbeddedSplit, features: str = "state_goal") -> tuple[np.ndarray, np.ndarray]:
    """Features [N, 2D] = [φ(s_t), φ(g)] (φ(g) zeroed for `state`) and targets [N] = remaining steps."""
    rows, targets = [], []
    for trajectory, goal in zip(split.trajectories, split.goals):
        steps = len(trajectory) - 1
        goals = np.broadcast_to(goal, trajectory.shape) * (features == "state_goal")
        rows.append(np.concatenate([trajectory, goals], axis=1))
        targets.append(np.arange(steps, -1, -1, dtype=np.float64))
    return np.concatenate(rows).astype(np.float64), np.concatenate(targets)


@dataclasses.dataclass
class ValueData:
    """The expert trajectories the cost-to-go is fitted on, embedded with its own encoder."""

    train: EmbeddedSplit
    validation: EmbeddedSplit
    encoder: Encoder


@dataclasses.dataclass
class RidgeCostToGo:
    weights: np.ndarray  # [2D]
    bias: float
    alpha: float
    encoder: Encoder | None = None  # its own φ; None: the transition model's

    def embed(
        self, pairs: Sequence[Pair], parents: Sequence[frozenset[str] | None], embeddings: np.ndarray
    ) -> np.ndarray:
        """Its features of (task, state) pairs: the transition model's `embeddings` of them, or its own."""
        if self.encoder is None:
            return embeddings
        return np.asarray(self.encoder.embed(pairs, parents), np.float32)

    def estimate(self, states: np.ndarray, goals: np.ndarray) -> np.ndarray:
        """Remaining steps for each (state, goal) row, never below zero."""
        if self.encoder is not None:  # its own φ(s) alone (config.check): the weights on φ(g) are zero
            goals = np.zeros_like(states)
        features = np.concatenate([np.asarray(states, np.float64), np.asarray(goals, np.float64)], axis=1)
        return self.predict(features).astype(np.float32)

    def predict(self, features: np.ndarray) -> np.ndarray:
        return np.maximum(features @ self.weights + self.bias, 0.0)

    def save(self, directory: str | os.PathLike) -> None:
        def write(tmp: pathlib.Path) -> None:
            with open(tmp, "wb") as f:
                np.savez(f, weights=self.weights, bias=self.bias, alpha=self.alpha, format=_FORMAT)

        replace_atomically(pathlib.Path(directory) / VALUE_FILE, write)
        if self.encoder is not None:
            self.encoder.save(pathlib.Path(directory) / ENCODER_FILE)
        else:
            (pathlib.Path(directory) / ENCODER_FILE).unlink(missing_ok=True)


def _ridge(features: np.ndarray, targets: np.ndarray, alpha: float) -> RidgeCostToGo:
    mean_x, mean_y = features.mean(axis=0), targets.mean()
    centred = features - mean_x
    gram = centred.T @ centred + alpha * np.eye(features.shape[1])
    weights = np.linalg.solve(gram, centred.T @ (targets - mean_y))
    return RidgeCostToGo(weights, float(mean_y - mean_x @ weights), alpha)


def fit(
    train: EmbeddedSplit, validation: EmbeddedSplit, alpha: float, features: str, encoder: Encoder | None = None
) -> tuple[RidgeCostToGo, dict]:
    """The ridge fit on both splits, and its validation error when fitted on `train` alone (for the log).
    `encoder`: the splits were embedded with the cost-to-go's own encoder, not the transition model's."""
    if not alpha > 0:
        raise InputError(None, f"value.alpha must be a positive ridge strength, not {alpha}")
    if features not in FEATURES:
        raise InputError(None, f"value.features={features!r} is not one of {', '.join(FEATURES)}")
    x_train, y_train = labelled_rows(train, features)
    x_val, y_val = labelled_rows(validation, features)
    held_out = float(np.mean((_ridge(x_train, y_train, alpha).predict(x_val) - y_val) ** 2))
    model = _ridge(np.concatenate([x_train, x_val]), np.concatenate([y_train, y_val]), alpha)
    model.encoder = encoder
    dim = None if encoder is None else encoder.dim
    return model, {"alpha": alpha, "features": features, "own_dim": dim, "validation_mse_fit_on_train": held_out}


def load(directory: str | os.PathLike, own_embedding: bool = False) -> RidgeCostToGo:
    """The cost-to-go saved in `directory`; `own_embedding`: with its own encoder (config value.embedding)."""
    path = pathlib.Path(directory) / VALUE_FILE
    encoder = load_encoder(pathlib.Path(directory) / ENCODER_FILE) if own_embedding else None
    try:
        with np.load(path) as data:
            if int(data["format"]) != _FORMAT:
                raise InputError(path, f"value model format {int(data['format'])}, expected {_FORMAT}")
            return RidgeCostToGo(data["weights"], float(data["bias"]), float(data["alpha"]), encoder)
    except FileNotFoundError:
        raise InputError(path, "no value model here (config value.kind is set, but it was not trained)") from None
    except (OSError, EOFError, ValueError, KeyError, zipfile.BadZipFile) as e:
        raise InputError(path, f"corrupt value model file ({type(e).__name__})") from None
