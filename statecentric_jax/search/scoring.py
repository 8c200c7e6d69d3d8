"""Distances between a model's predicted next-state embedding and candidate embeddings.

Cosine for state-mode models (the prediction is a state embedding), Euclidean for delta
mode (the paper's choice per mode). `distances` is the batched, jit-compiled form the
decoder uses; `reference_distance` is the one-pair NumPy form the sequential reference uses.
"""

from __future__ import annotations

import functools
from typing import Literal, get_args

import jax
import jax.numpy as jnp
import numpy as np

from statecentric_jax.errors import InputError

Metric = Literal["cosine", "euclidean"]
METRICS: tuple[str, ...] = get_args(Metric)


def check_metric(metric: str) -> Metric:
    if metric not in METRICS:
        raise InputError(None, f"unknown decoding metric '{metric}' (use {' or '.join(METRICS)})")
    return metric  # type: ignore[return-value]  # checked just above


@functools.partial(jax.jit, static_argnames=("metric",))
def distances(targets: jax.Array, candidates: jax.Array, *, metric: str) -> jax.Array:
    """Distances between targets [N, D] and candidates [N, C, D] -> [N, C]."""
    if metric == "cosine":
        dots = jnp.einsum("nd,ncd->nc", targets, candidates)
        norms = jnp.linalg.norm(targets, axis=-1)[:, None] * jnp.linalg.norm(candidates, axis=-1)
        return 1.0 - dots / jnp.maximum(norms, 1e-12)
    return jnp.linalg.norm(candidates - targets[:, None, :], axis=-1)


def reference_distance(target: np.ndarray, candidate: np.ndarray, metric: str) -> np.float32:
    """One distance in NumPy float32, for the sequential reference decoder."""
    if metric == "cosine":
        norms = np.float32(np.linalg.norm(target) * np.linalg.norm(candidate))
        return np.float32(1.0) - np.float32(target @ candidate) / max(norms, np.float32(1e-12))
    return np.float32(np.linalg.norm(candidate - target))
