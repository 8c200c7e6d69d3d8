"""Why decoding of an instance stopped."""

from __future__ import annotations

import enum


class Outcome(str, enum.Enum):
    """Why decoding of an instance stopped (besides "cannot encode: <reason>")."""

    GOAL = "goal"
    HORIZON = "horizon"
    DEAD_END = "dead end"
    BUDGET = "budget"
    TIMEOUT = "timeout"  # decode.time_limit reached
    MEMORY = "memory"  # decode.memory_limit_mb reached
