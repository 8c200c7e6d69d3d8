"""Python's cyclic garbage collector, paused where the project builds large acyclic structures.

Grounding a large task (hundreds of thousands of operators, each a few frozensets of shared strings) and
decoding (states, nodes, cache entries) allocate millions of small objects that reference counting frees.
The collector's periodic passes over that growing heap find next to nothing there, yet took a large share of
the time of both.
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator


@contextlib.contextmanager
def collector_paused() -> Iterator[None]:
    """Pause the collector for the block (also as a decorator); it is switched back on, as it was, at the end."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
