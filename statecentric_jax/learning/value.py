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
is fitted on, aggregated ones too (`method/aggregation.py`): finer colours need more states.
Goal paths (`value.goal_paths`, `embedding/goal_paths.py`) may stand beside either φ: they tell
apart states that no function of 1-WL colours can (a package in the truck of its goal city or in
another one).

On disk: `<workdir>/value.npz` with `weights` [2D] (zeros on φ(g) for `state`), `bias`,
`alpha` and `format`; with an own embedding also `<workdir>/value_encoder.json`, its encoder;
with goal paths also `<workdir>/value_goal_paths.json`, their vocabulary (the last columns of D).
"""

from __future__ import annotations

import dataclasses
import os
import pathlib
import zipfile
from collections.abc import Sequence
from typing import Literal, get_args

import numpy as np
import scipy.sparse

from statecentric_jax.atomic import replace_atomically
from statecentric_jax.embedding.datasets import EmbeddedSplit
from statecentric_jax.embedding.encoders import Encoder, Pair, load_encoder
from statecentric_jax.embedding.goal_paths import GoalPathEncoder
from statecentric_jax.embedding.side_by_side import SideBySide
from statecentric_jax.errors import InputError

VALUE_FILE = "value.npz"
ENCODER_FILE = "value_encoder.json"
GOAL_PATHS_FILE = "value_goal_paths.json"
_FORMAT = 1


Features = Literal["state", "state_goal"]
FEATURES: tuple[str, ...] = get_args(Features)


def labelled_rows(
    split: EmbeddedSplit, features: str = "state_goal", sparse: bool = False
) -> tuple[np.ndarray | scipy.sparse.csr_array, np.ndarray]:
    """Features [N, 2D] = [φ(s_t), φ(g)] (φ(g) zeroed for `state`) and targets [N] = remaining steps.
    `sparse`: the features as a CSR matrix: WL rows of large domains are mostly zeros, and dense they
    may not fit in memory (states x 2D float64)."""
    rows: list = []
    targets = []
    for trajectory, goal in zip(split.trajectories, split.goals):
        steps = len(trajectory) - 1
        goals = np.broadcast_to(goal, trajectory.shape) * (features == "state_goal")
        row = np.concatenate([trajectory, goals], axis=1)
        rows.append(scipy.sparse.csr_array(row) if sparse else row)
        targets.append(np.arange(steps, -1, -1, dtype=np.float64))
    if sparse:
        return scipy.sparse.vstack(rows, format="csr").astype(np.float64), np.concatenate(targets)
    return np.concatenate(rows).astype(np.float64), np.concatenate(targets)


@dataclasses.dataclass
class ValueData:
    """The expert trajectories the cost-to-go is fitted on, embedded as it reads them: with its φ (`own`:
    its own; else the transition model's) and the goal paths beside it, if any."""

    train: EmbeddedSplit
    validation: EmbeddedSplit
    phi: Encoder
    own: bool
    goal_paths: GoalPathEncoder | None = None

    @property
    def encoder(self) -> Encoder:
        """What embeds more states for it (aggregated trajectories)."""
        return features_encoder(self.phi, self.goal_paths)


def features_encoder(phi: Encoder, goal_paths: GoalPathEncoder | None) -> Encoder:
    """φ, with the goal paths beside it if any: the features a cost-to-go is fitted on."""
    return phi if goal_paths is None else SideBySide([phi, goal_paths])


@dataclasses.dataclass
class RidgeCostToGo:
    weights: np.ndarray  # [2D]
    bias: float
    alpha: float
    encoder: Encoder | None = None  # its own φ; None: the transition model's
    goal_paths: GoalPathEncoder | None = None  # beside φ, the last columns
    clipped: bool = True  # `estimate` reads an estimate below zero as zero (decode.clip_cost_to_go)

    @property
    def reads_model_embedding(self) -> bool:
        """Whether `embed` reads the transition model's embeddings (it has no φ of its own)."""
        return self.encoder is None

    def embed(
        self, pairs: Sequence[Pair], parents: Sequence[frozenset[str] | None], embeddings: np.ndarray | None
    ) -> np.ndarray:
        """Its features of (task, state) pairs: the transition model's `embeddings` of them (None where
        `reads_model_embedding` is false), or its own φ; with goal paths beside."""
        if self.encoder is None:
            assert embeddings is not None  # reads_model_embedding: the expander embedded them
            phi = embeddings
        else:
            phi = np.asarray(self.encoder.embed(pairs, parents), np.float32)
        if self.goal_paths is None:
            return phi
        return np.hstack([phi, self.goal_paths.embed(pairs, parents)])

    def estimate(self, states: np.ndarray, goals: np.ndarray) -> np.ndarray:
        """Remaining steps for each (state, goal) row; never below zero where `clipped` (fitted on small problems,
        the linear estimate can fall below zero on large ones well before the goal, and zero for all of those
        states ties them). Above `SPARSE_ABOVE` features (wide WL rows) each half is multiplied by its weights,
        φ(g)'s not at all when it is zero: a float64 copy of [φ(s), φ(g)] per expansion costs more than
        embedding the successors."""
        phi_alone = self.encoder is not None or self.goal_paths is not None  # (config.check): zero on φ(g)
        half = states.shape[1]
        if 2 * half > SPARSE_ABOVE:
            estimate = np.asarray(states, np.float64) @ self.weights[:half]
            if not phi_alone:
                estimate += np.asarray(goals, np.float64) @ self.weights[half:]
        else:
            if phi_alone:
                goals = np.zeros_like(states)
            features = np.concatenate([np.asarray(states, np.float64), np.asarray(goals, np.float64)], axis=1)
            estimate = features @ self.weights
        estimate += self.bias
        return (np.maximum(estimate, 0.0) if self.clipped else estimate).astype(np.float32)

    def predict(self, features: np.ndarray | scipy.sparse.csr_array) -> np.ndarray:
        return np.maximum(features @ self.weights + self.bias, 0.0)

    def save(self, directory: str | os.PathLike) -> None:
        def write(tmp: pathlib.Path) -> None:
            with open(tmp, "wb") as f:
                np.savez(f, weights=self.weights, bias=self.bias, alpha=self.alpha, format=_FORMAT)

        replace_atomically(pathlib.Path(directory) / VALUE_FILE, write)
        for encoder, name in ((self.encoder, ENCODER_FILE), (self.goal_paths, GOAL_PATHS_FILE)):
            if encoder is not None:
                encoder.save(pathlib.Path(directory) / name)
            else:
                (pathlib.Path(directory) / name).unlink(missing_ok=True)


SPARSE_ABOVE = 4096  # features beyond which the rows are kept sparse (`labelled_rows`) and `_sparse_ridge` fits them


def _ridge(features: np.ndarray, targets: np.ndarray, alpha: float) -> RidgeCostToGo:
    """Centred ridge on dense rows (up to `SPARSE_ABOVE` features: the solve earlier runs used, so their
    weights stay bit-identical)."""
    mean_x, mean_y = features.mean(axis=0), targets.mean()
    centred = features - mean_x
    columns = centred.shape[1]
    weights = np.linalg.solve(centred.T @ centred + alpha * np.eye(columns), centred.T @ (targets - mean_y))
    return RidgeCostToGo(weights, float(mean_y - mean_x @ weights), alpha)


def _sparse_ridge(features: scipy.sparse.csr_array, targets: np.ndarray, alpha: float) -> RidgeCostToGo:
    """The centred ridge of `_ridge` on sparse rows, never densified: the centring is folded into the
    Gram matrix. With more features than rows (WL dimensions of large domains) it is solved over the
    rows (dual form), at a cost that grows with the square of the rows, not the cube of the features."""
    rows, columns = features.shape
    mean_x, mean_y = np.asarray(features.mean(axis=0)).ravel(), targets.mean()
    centred_y = targets - mean_y
    if rows < columns:
        projected = features @ mean_x  # x_i . mean
        gram = (features @ features.T).toarray() - projected[:, None] - projected[None, :] + mean_x @ mean_x
        dual = np.linalg.solve(gram + alpha * np.eye(rows), centred_y)
        weights = features.T @ dual - mean_x * dual.sum()
    else:
        scatter = (features.T @ features).toarray() - rows * np.outer(mean_x, mean_x)
        weights = np.linalg.solve(scatter + alpha * np.eye(columns), features.T @ centred_y - mean_x * centred_y.sum())
    return RidgeCostToGo(weights, float(mean_y - mean_x @ weights), alpha)


def fit(
    train: EmbeddedSplit,
    validation: EmbeddedSplit,
    alpha: float,
    features: str,
    encoder: Encoder | None = None,
    goal_paths: GoalPathEncoder | None = None,
) -> tuple[RidgeCostToGo, dict]:
    """The ridge fit on both splits, and its validation error when fitted on `train` alone (for the log).
    `encoder`: the splits were embedded with the cost-to-go's own φ, not the transition model's;
    `goal_paths`: with goal paths beside φ."""
    if not alpha > 0:
        raise InputError(None, f"value.alpha must be a positive ridge strength, not {alpha}")
    if features not in FEATURES:
        raise InputError(None, f"value.features={features!r} is not one of {', '.join(FEATURES)}")
    sparse = 2 * train.goals.shape[1] > SPARSE_ABOVE
    ridge = _sparse_ridge if sparse else _ridge
    x_train, y_train = labelled_rows(train, features, sparse)
    x_val, y_val = labelled_rows(validation, features, sparse)
    held_out = float(np.mean((ridge(x_train, y_train, alpha).predict(x_val) - y_val) ** 2))
    x_all = scipy.sparse.vstack([x_train, x_val], format="csr") if sparse else np.concatenate([x_train, x_val])
    model = ridge(x_all, np.concatenate([y_train, y_val]), alpha)
    model.encoder, model.goal_paths = encoder, goal_paths
    dims = {"own_dim": None if encoder is None else encoder.dim}
    if goal_paths is not None:
        dims["goal_paths_dim"] = goal_paths.dim
    return model, {"alpha": alpha, "features": features, **dims, "validation_mse_fit_on_train": held_out}


def load(
    directory: str | os.PathLike, phi_dim: int | None = None, own_embedding: bool = False, goal_paths: bool = False
) -> RidgeCostToGo:
    """The cost-to-go saved in `directory`; `phi_dim`: the transition model's embedding size, which its weights
    must fit (None: unchecked); `own_embedding`: with its own encoder (config value.embedding), whose size they
    must fit instead; `goal_paths`: with goal paths beside φ (config value.goal_paths)."""
    path = pathlib.Path(directory) / VALUE_FILE
    encoder = load_encoder(pathlib.Path(directory) / ENCODER_FILE) if own_embedding else None
    paths = GoalPathEncoder.load(pathlib.Path(directory) / GOAL_PATHS_FILE) if goal_paths else None
    dim = encoder.dim if encoder is not None else phi_dim
    try:
        with np.load(path) as data:
            if int(data["format"]) != _FORMAT:
                raise InputError(path, f"value model format {int(data['format'])}, expected {_FORMAT}")
            model = RidgeCostToGo(data["weights"], float(data["bias"]), float(data["alpha"]), encoder, paths)
    except FileNotFoundError:
        raise InputError(path, "no value model here (config value.kind is set, but it was not trained)") from None
    except (OSError, EOFError, ValueError, KeyError, zipfile.BadZipFile) as e:
        raise InputError(path, f"corrupt value model file ({type(e).__name__})") from None
    if dim is not None:  # checked now, not when decoding first multiplies by them
        expected = 2 * (dim + (paths.dim if paths is not None else 0))
        if model.weights.shape != (expected,):
            raise InputError(path, f"weights of shape {model.weights.shape}, expected ({expected},): not this run's")
    return model
