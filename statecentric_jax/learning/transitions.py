"""The learning problem every transition model shares: (phi(s_t), phi(g)) -> target.

In state mode the target is phi(s_{t+1}); in delta mode it is the residual
Delta_t = phi(s_{t+1}) - phi(s_t), and phi(s_t) is added back at prediction time
so that every model hands the decoder a target in state space.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal, Protocol, get_args

import numpy as np

Mode = Literal["state", "delta"]
MODES: tuple[str, ...] = get_args(Mode)


def targets(trajectory: np.ndarray, mode: str) -> np.ndarray:
    """Training targets [T, D] for the T transitions of one trajectory [T+1, D]."""
    if mode == "state":
        return trajectory[1:]
    if mode == "delta":
        return trajectory[1:] - trajectory[:-1]
    raise ValueError(f"unknown mode {mode!r}")


def sequences(trajectories: Sequence[np.ndarray], goals: np.ndarray, mode: str) -> list[tuple[np.ndarray, np.ndarray]]:
    """Per problem: inputs [T, 2D] = concat(phi(s_t), phi(g)) and targets [T, D].

    Problems solved by the empty plan (T = 0) teach no transition and are left out.
    """
    pairs = []
    for trajectory, goal in zip(trajectories, goals):
        trajectory = np.asarray(trajectory, dtype=np.float32)
        if len(trajectory) < 2:
            continue
        repeated = np.broadcast_to(np.asarray(goal, dtype=np.float32), trajectory[:-1].shape)
        pairs.append((np.concatenate([trajectory[:-1], repeated], axis=1), targets(trajectory, mode)))
    return pairs


def to_state_space(states: np.ndarray, outputs: np.ndarray, mode: str) -> np.ndarray:
    """The predicted next-state embeddings: outputs, plus the current state in delta mode."""
    return outputs + states if mode == "delta" else outputs


class TransitionModel(Protocol):
    """What decoding needs from a trained model, whatever its kind.

    `carry` is a pytree whose leaves have the batch as leading axis (so a beam
    search can gather or concatenate rows), or None for stateless models.
    """

    kind: str
    mode: str
    dim: int

    def init_carry(self, batch_size: int) -> Any: ...

    def predict_next(self, states: np.ndarray, goals: np.ndarray, carry: Any) -> tuple[np.ndarray, Any]: ...

    def size(self) -> dict[str, int]: ...

    def save(self, directory: str) -> None: ...
