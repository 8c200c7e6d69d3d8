"""The tree transition model: gradient-boosted regression from [phi(s_t), phi(g)] to a target.

Purely local (no memory across steps): every transition of every trajectory is
one row. Training stops when the validation loss has not improved for
`early_stopping` rounds and keeps the trees up to the best round.
"""

from __future__ import annotations

import dataclasses
import json
import os
import pathlib
from typing import TYPE_CHECKING, ClassVar

import ml_collections
import numpy as np
import xgboost
from absl import logging
from tqdm import tqdm

from statecentric_jax import devices
from statecentric_jax.atomic import replace_atomically
from statecentric_jax.errors import InputError
from statecentric_jax.learning.transitions import sequences, to_state_space

if TYPE_CHECKING:
    from statecentric_jax.embedding.datasets import EmbeddedSplit

MODEL_FILE = "model.ubj"


def rows(split: EmbeddedSplit, mode: str) -> tuple[np.ndarray, np.ndarray]:
    """All transitions of a split as features [N, 2D] and targets [N, D]."""
    pairs = sequences(split.trajectories, split.goals, mode)
    return np.concatenate([x for x, _ in pairs]), np.concatenate([y for _, y in pairs])


def device() -> str:
    """XGBoost's device: 'cuda' where JAX runs on the GPU (`devices.on_gpu`) and this XGBoost was built with
    CUDA, else 'cpu' (a CPU-only XGBoost beside a GPU JAX logs a warning once)."""
    if not devices.on_gpu():
        return "cpu"
    if xgboost.build_info().get("USE_CUDA"):
        return "cuda"
    logging.log_first_n(logging.WARNING, "JAX runs on the GPU, but this XGBoost has no CUDA: its trees use the CPU", 1)
    return "cpu"


@dataclasses.dataclass
class XGBModel:
    kind: ClassVar[str] = "xgb"
    booster: xgboost.Booster
    dim: int
    mode: str

    def init_carry(self, batch_size: int) -> None:
        return None

    def predict_next(self, states: np.ndarray, goals: np.ndarray, carry: None) -> tuple[np.ndarray, None]:
        states = np.asarray(states, np.float32)
        features = np.concatenate([states, np.asarray(goals, np.float32)], axis=1)
        outputs = np.asarray(self.booster.inplace_predict(features), np.float32).reshape(len(states), self.dim)
        return to_state_space(states, outputs, self.mode), None

    def size(self) -> dict[str, int]:
        """Tree nodes (splits and leaves) of the kept trees, plus trees and boosting rounds."""
        trees = json.loads(self.booster.save_raw("json"))["learner"]["gradient_booster"]["model"]["trees"]
        nodes = sum(int(t["tree_param"]["num_nodes"]) - int(t["tree_param"]["num_deleted"]) for t in trees)
        return {"nodes": nodes, "trees": len(trees), "rounds": self.booster.num_boosted_rounds()}

    def save(self, directory: str | os.PathLike) -> None:
        directory = pathlib.Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        raw = bytes(self.booster.save_raw("ubj"))
        replace_atomically(directory / MODEL_FILE, lambda tmp: tmp.write_bytes(raw))


def load(directory: str | os.PathLike, dim: int, mode: str, settings: ml_collections.ConfigDict) -> XGBModel:
    """Load the trees; prediction runs on this machine's GPU if it has one."""
    path = pathlib.Path(directory) / MODEL_FILE
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise InputError(path, "XGBoost model not found") from None
    if not raw:  # XGBoost aborts the process on an empty buffer
        raise InputError(path, "corrupt XGBoost model (empty file)")
    try:
        booster = xgboost.Booster()
        booster.load_model(bytearray(raw))
    except xgboost.core.XGBoostError as e:
        raise InputError(path, f"corrupt XGBoost model ({str(e).splitlines()[0]})") from None
    booster.set_param({"device": device(), "nthread": settings.n_jobs})
    if booster.num_features() != 2 * dim:
        raise InputError(path, f"model takes {booster.num_features()} features, not 2 x {dim} (encoder dimension)")
    return XGBModel(booster, dim, mode)


class _Progress(xgboost.callback.TrainingCallback):
    def __init__(self, bar: tqdm):
        super().__init__()
        self.bar = bar

    def after_iteration(self, model, epoch: int, evals_log) -> bool:
        self.bar.update(1)
        self.bar.set_postfix(val=f"{evals_log['validation']['rmse'][-1] ** 2:.4g}", refresh=False)
        return False


def fit(
    train: EmbeddedSplit, validation: EmbeddedSplit, mode: str, settings: ml_collections.ConfigDict, seed: int
) -> tuple[XGBModel, list[dict]]:
    """Squared error, hist trees; per-round losses are MSE (XGBoost's RMSE squared)."""
    x_train, y_train = rows(train, mode)
    x_val, y_val = rows(validation, mode)
    train_matrix = xgboost.QuantileDMatrix(x_train, y_train)
    val_matrix = xgboost.QuantileDMatrix(x_val, y_val, ref=train_matrix)
    params = {
        "objective": "reg:squarederror",
        "eval_metric": "rmse",
        "tree_method": "hist",
        "max_depth": settings.max_depth,
        "learning_rate": settings.learning_rate,
        "multi_strategy": settings.multi_strategy,
        "device": device(),
        "nthread": settings.n_jobs,
        "seed": seed,
    }
    log: dict = {}
    with tqdm(total=settings.rounds, desc=f"xgb {mode}", unit="round", mininterval=2) as bar:
        booster = xgboost.train(
            params,
            train_matrix,
            num_boost_round=settings.rounds,
            evals=[(train_matrix, "train"), (val_matrix, "validation")],
            early_stopping_rounds=settings.early_stopping,
            evals_result=log,
            verbose_eval=False,
            callbacks=[_Progress(bar)],
        )
    history = [
        {"step": i + 1, "train_loss": tr**2, "validation_loss": va**2}
        for i, (tr, va) in enumerate(zip(log["train"]["rmse"], log["validation"]["rmse"]))
    ]
    return XGBModel(booster[: booster.best_iteration + 1], y_train.shape[1], mode), history
