"""Distances between a model's predicted next-state embedding and candidate embeddings.

Cosine for state-mode models (the prediction is a state embedding), Euclidean for delta
mode (the paper's choice per mode). Every decoder uses the one function here, in NumPy
float32, row by row: a candidate's distance does not depend on what else is in the call,
so the batched and the one-at-a-time decoders score every candidate bit for bit alike.
The arrays are small ([candidates, D] per decoding step), where a device round trip
or a compiled kernel would cost more than the arithmetic.
"""

from __future__ import annotations

from typing import Literal, get_args

import numpy as np

from statecentric_jax.errors import InputError

Metric = Literal["cosine", "euclidean"]
METRICS: tuple[str, ...] = get_args(Metric)


def check_metric(metric: str) -> Metric:
    if metric not in METRICS:
        raise InputError(None, f"unknown decoding metric '{metric}' (use {' or '.join(METRICS)})")
    return metric  # type: ignore[return-value]  # checked just above


def distances(targets: np.ndarray, candidates: np.ndarray, metric: str) -> np.ndarray:
    """float32 distances between the rows of targets [M, D] and of candidates [M, D] -> [M]."""
    targets = np.asarray(targets, np.float32)
    candidates = np.asarray(candidates, np.float32)
    if metric == "cosine":
        dots = np.sum(targets * candidates, axis=1)
        norms = np.sqrt(np.sum(targets * targets, axis=1)) * np.sqrt(np.sum(candidates * candidates, axis=1))
        return np.float32(1.0) - dots / np.maximum(norms, np.float32(1e-12))
    difference = candidates - targets
    return np.sqrt(np.sum(difference * difference, axis=1))
