"""The paper's decoder run the way its own code runs it: the yardstick for decoding speed.

The sequential reference decoder (`sequential.py`: one instance at a time, one model
call per beam element) with every WL embedding computed by wlplan from scratch, one
call per candidate state: no incremental colours, no batching, no parent hints. Plans
are those of `decode_sequential` (and of `decode`), since wlplan and `wl_fast` give
identical embeddings; only the time differs.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence

import numpy as np

from statecentric_jax.embedding.encoders import Pair, StateEncoder, WLEncoder
from statecentric_jax.learning.transitions import TransitionModel
from statecentric_jax.planning.tasks import Task
from statecentric_jax.search.base import DecodeConfig, DecodeResult
from statecentric_jax.search.expander import DecodeStats
from statecentric_jax.search.sequential import decode_sequential


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


def decode_paper(
    tasks: Sequence[Task],
    model: TransitionModel,
    encoder: StateEncoder,
    config: DecodeConfig = DecodeConfig(),
    stats: DecodeStats | None = None,
) -> list[DecodeResult]:
    """`decode_sequential` with wlplan embedding each candidate in its own call (WL; other encoders as given)."""
    reference = OneWLPlanCallPerState(encoder) if isinstance(encoder, WLEncoder) else encoder
    return decode_sequential(tasks, model, reference, config, stats)
