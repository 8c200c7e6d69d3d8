"""The linear transition model: ridge regression from [phi(s_t), phi(g)] to a target, in dual form.

Its cost does not grow with the WL dimension D as boosting one tree per output does: with n training
transitions and D in the thousands (n << D), the fit is one eigendecomposition of the n x n Gram
matrix of the (sparse) inputs, shared by every ridge strength, and a prediction is one sparse product
with the n training inputs and one with the n x c dual coefficients, where c counts the output
colours that vary in training: delta targets are sparse (a step changes a few colours), and an output
that never varies is predicted as its training mean. The strength is picked from `settings.alphas` by
validation error; the kept model is fitted on the training split, as the boosted trees are. With
`settings.rank` = r > 0 the chosen n x c coefficients are kept as their best rank-r factors (truncated
SVD), so that a prediction costs n r + r c, not n c: with D in the ten thousands and n in the hundreds
that is what keeps it below the cost of embedding a node's successors. The history has one row per
strength (exact), then one for the kept factored model when the rank lowers anything.

On disk: `<checkpoint>/ridge.npz` with the training inputs' used columns (`inputs`) as a sparse
matrix (`x_data`, `x_indices`, `x_indptr`, `x_shape`), their mean `x_mean`, the dual coefficients as
two factors `coef_left` [n, r] and `coef_right` [r, c] (exact: the identity and the coefficients) for the
varying outputs `outputs`, the targets' mean `y_mean` [D], `alpha`, `format`.
"""

from __future__ import annotations

import dataclasses
import os
import pathlib
import zipfile
from typing import TYPE_CHECKING, ClassVar

import ml_collections
import numpy as np
import scipy.sparse

from statecentric_jax.atomic import replace_atomically
from statecentric_jax.errors import InputError
from statecentric_jax.learning.transitions import sequences, to_state_space

if TYPE_CHECKING:
    from statecentric_jax.embedding.datasets import EmbeddedSplit

MODEL_FILE = "ridge.npz"
_FORMAT = 1


def rows(split: EmbeddedSplit, mode: str) -> tuple[np.ndarray, np.ndarray]:
    """All transitions of a split as features [N, 2D] and targets [N, D]."""
    pairs = sequences(split.trajectories, split.goals, mode)
    return np.concatenate([x for x, _ in pairs]), np.concatenate([y for _, y in pairs])


@dataclasses.dataclass
class RidgeModel:
    kind: ClassVar[str] = "ridge"
    inputs: np.ndarray  # int [p]: the feature columns some training row uses (others add nothing)
    x_train: scipy.sparse.csr_matrix  # [n, p] the training features on those columns
    x_mean: np.ndarray  # [p]
    outputs: np.ndarray  # int [c]: the target columns that vary in training
    coef_left: np.ndarray  # [n, r] dual coefficients = coef_left @ coef_right
    coef_right: np.ndarray  # [r, c]
    y_mean: np.ndarray  # [D]
    alpha: float
    dim: int
    mode: str

    def __post_init__(self) -> None:
        # For centred features: k(x) = (x - m) Xc^T = x X^T - (x.m) 1 - (m X^T) + (m.m) 1.
        self._train_dot_mean = np.asarray(self.x_train @ self.x_mean, np.float64)
        self._mean_sq = float(self.x_mean @ self.x_mean)

    def init_carry(self, batch_size: int) -> None:
        return None

    def outputs_of(self, features: np.ndarray) -> np.ndarray:
        """The predicted targets [B, D] of feature rows [B, 2D]."""
        used = np.asarray(features, np.float64)[:, self.inputs]
        kernel = np.asarray((self.x_train @ used.T).T)  # [B, n]
        kernel += (self._mean_sq - used @ self.x_mean)[:, None] - self._train_dot_mean[None, :]
        out = np.broadcast_to(self.y_mean, (len(features), self.dim)).copy()
        out[:, self.outputs] += (kernel @ self.coef_left) @ self.coef_right
        return out.astype(np.float32)

    def predict_next(self, states: np.ndarray, goals: np.ndarray, carry: None) -> tuple[np.ndarray, None]:
        states = np.asarray(states, np.float32)
        features = np.concatenate([states, np.asarray(goals, np.float32)], axis=1)
        return to_state_space(states, self.outputs_of(features), self.mode), None

    def size(self) -> dict[str, int]:
        """Stored numbers: training rows, used input columns, varying outputs, rank, dual coefficients."""
        n, p = self.x_train.shape
        rank, coefficients = len(self.coef_right), self.coef_left.size + self.coef_right.size
        return {"rows": n, "inputs": p, "outputs": len(self.outputs), "rank": rank, "coefficients": coefficients}

    def save(self, directory: str | os.PathLike) -> None:
        directory = pathlib.Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        arrays = {
            "inputs": self.inputs,
            "x_data": self.x_train.data.astype(np.float32),
            "x_indices": self.x_train.indices,
            "x_indptr": self.x_train.indptr,
            "x_shape": np.asarray(self.x_train.shape),
            "x_mean": self.x_mean,
            "outputs": self.outputs,
            "coef_left": self.coef_left.astype(np.float32),
            "coef_right": self.coef_right.astype(np.float32),
            "y_mean": self.y_mean,
            "alpha": self.alpha,
            "format": _FORMAT,
        }

        def write(tmp: pathlib.Path) -> None:
            with open(tmp, "wb") as f:
                np.savez_compressed(f, **arrays)

        replace_atomically(directory / MODEL_FILE, write)


def load(directory: str | os.PathLike, dim: int, mode: str, settings: ml_collections.ConfigDict) -> RidgeModel:
    path = pathlib.Path(directory) / MODEL_FILE
    try:
        with np.load(path) as data:
            if int(data["format"]) != _FORMAT:
                raise InputError(path, f"ridge model format {int(data['format'])}, expected {_FORMAT}")
            shape = tuple(int(v) for v in data["x_shape"])
            x_train = scipy.sparse.csr_matrix(
                (data["x_data"].astype(np.float64), data["x_indices"], data["x_indptr"]), shape=shape
            )
            if "coef" in data:  # written before the factors: the exact coefficients
                left, right = np.eye(shape[0]), data["coef"].astype(np.float64)
            else:
                left, right = data["coef_left"].astype(np.float64), data["coef_right"].astype(np.float64)
            model = RidgeModel(
                data["inputs"],
                x_train,
                data["x_mean"],
                data["outputs"],
                left,
                right,
                data["y_mean"],
                float(data["alpha"]),
                dim,
                mode,
            )
    except FileNotFoundError:
        raise InputError(path, "ridge model not found") from None
    except (OSError, EOFError, ValueError, KeyError, zipfile.BadZipFile) as e:
        raise InputError(path, f"corrupt ridge model ({type(e).__name__})") from None
    if len(model.y_mean) != dim or (len(model.inputs) and model.inputs.max() >= 2 * dim):
        raise InputError(path, f"model was fitted for another dimension than {dim} (encoder dimension)")
    return model


def fit(
    train: EmbeddedSplit, validation: EmbeddedSplit, mode: str, settings: ml_collections.ConfigDict, seed: int
) -> tuple[RidgeModel, list[dict]]:
    """One fit per strength in `settings.alphas` from one eigendecomposition; keeps the best on validation.
    Losses are mean squared errors per output, as the other kinds report them. `seed` is unused (exact)."""
    alphas, rank = [float(a) for a in settings.alphas], settings.get("rank", 0)
    if not alphas or min(alphas) <= 0:
        raise InputError(None, f"config ridge.alphas={tuple(settings.alphas)!r} must be positive strengths")
    x, y = rows(train, mode)
    x_val, y_val = rows(validation, mode)
    dim = y.shape[1]
    inputs = np.flatnonzero(np.any(x != 0, axis=0))
    outputs = np.flatnonzero(np.ptp(y, axis=0) > 0)
    x_used = scipy.sparse.csr_matrix(x[:, inputs], dtype=np.float64)
    x_mean = np.asarray(x_used.mean(axis=0)).ravel()
    y_mean = y.mean(axis=0, dtype=np.float64)
    dot_mean = x_used @ x_mean
    gram = np.asarray((x_used @ x_used.T).todense())  # of the centred inputs, from the sparse ones:
    gram += float(x_mean @ x_mean) - dot_mean[:, None] - dot_mean[None, :]
    eigenvalues, eigenvectors = np.linalg.eigh(gram)
    projected = eigenvectors.T @ (y[:, outputs] - y_mean[outputs])
    history, models = [], []

    def losses(model: RidgeModel) -> dict:
        train_loss, validation_loss = (
            float(np.mean((model.outputs_of(a) - b) ** 2)) for a, b in ((x, y), (x_val, y_val))
        )
        return {"alpha": model.alpha, "train_loss": train_loss, "validation_loss": validation_loss}

    for step, alpha in enumerate(alphas, 1):
        coef = eigenvectors @ (projected / (np.maximum(eigenvalues, 0.0) + alpha)[:, None])
        models.append(RidgeModel(inputs, x_used, x_mean, outputs, np.eye(len(coef)), coef, y_mean, alpha, dim, mode))
        history.append({"step": step, **losses(models[-1])})
    best = models[min(range(len(alphas)), key=lambda i: history[i]["validation_loss"])]
    if 0 < rank < min(best.coef_right.shape):
        left, right = _factors(best.coef_right, rank)
        best = dataclasses.replace(best, coef_left=left, coef_right=right)
        history.append({"step": len(alphas) + 1, "rank": rank, **losses(best)})
    return best, history


def _factors(coef: np.ndarray, rank: int) -> tuple[np.ndarray, np.ndarray]:
    """(left, right) with left @ right the best rank-`rank` approximation of `coef` (truncated SVD)."""
    u, s, vt = np.linalg.svd(coef, full_matrices=False)
    return u[:, :rank] * s[:rank], vt[:rank]
