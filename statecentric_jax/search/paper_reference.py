"""The paper's decoder run the way its own code runs it: the yardstick for decoding speed.

`decode_sequential(tasks, model, paper_encoder(encoder), ...)` is the sequential
reference decoder (one instance at a time, one model call per beam element) with every
WL embedding computed by wlplan from scratch, one call per candidate state: no
incremental colours, no batching, no parent hints. Plans are those of
`decode_sequential` with the encoder itself (and of `decode`), since wlplan and
`wl_fast` give identical embeddings; only the time differs.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence

import numpy as np

from statecentric_jax.embedding.encoders import Pair, StateEncoder, WLEncoder
from statecentric_jax.planning.tasks import Task


class OneWLPlanCallPerState:
    """A WL encoder's embeddings, each state in its own wlplan call."""

    def __init__(self, encoder: WLEncoder):
        self._wlplan = copy.copy(encoder)  # shares the vocabulary; `use_fast` becomes its own attribute
        self._wlplan.use_fast = False
        self.dim = encoder.dim

    def embed(self, pairs: Sequence[Pair], parents: Sequence[frozenset[str] | None] | None = None) -> np.ndarray:
        rows = [self._wlplan.embed([pair]) for pair in pairs]
        return np.concatenate(rows) if rows else np.zeros((0, self.dim), np.float32)

    def embed_goals(self, tasks: Sequence[Task]) -> np.ndarray:
        return self.embed([(task, task.goal) for task in tasks])


def paper_encoder(encoder: StateEncoder) -> StateEncoder:
    """A WL encoder's embeddings, one wlplan call per state; other encoders as given."""
    return OneWLPlanCallPerState(encoder) if isinstance(encoder, WLEncoder) else encoder
