"""Synthetic embedded splits with a learnable rule, and a stand-in encoder, for model tests.

States are count vectors (like WL histograms); each step adds one to the
coordinate where the goal is furthest ahead, until the state equals the goal.
"""

import json

import numpy as np

from statecentric_jax.embedding.datasets import EmbeddedSplit

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
