"""Feature families side by side: one encoder whose vector is its parts' vectors joined.

A cost-to-go may read the transition model's WL colours (or a WL φ of its own) and goal paths
(`embedding/goal_paths.py`) together; this is what embeds states for it in training and
aggregation. It is never saved as one file: each part is saved where its owner keeps it
(`learning/value.py`).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from statecentric_jax.embedding.encoders import Encoder, Pair
from statecentric_jax.planning.tasks import Task


class SideBySide(Encoder):
    """Its parts' features joined, in order; of unseen colours, the largest share among the parts."""

    kind = "side_by_side"

    def __init__(self, parts: Sequence[Encoder]):
        super().__init__(parts[0].domain, parts[0].predicates)
        self.parts = list(parts)

    @property
    def dim(self) -> int:
        return sum(part.dim for part in self.parts)

    def embed_with_unseen(
        self, pairs: Sequence[Pair], parents: Sequence[frozenset[str] | None] | None = None
    ) -> tuple[np.ndarray, float]:
        embedded = [part.embed_with_unseen(pairs, parents) for part in self.parts]
        return np.hstack([features for features, _ in embedded]), max(unseen for _, unseen in embedded)

    def embed_goals(self, tasks: Sequence[Task]) -> np.ndarray:
        return np.hstack([part.embed_goals(tasks) for part in self.parts])
