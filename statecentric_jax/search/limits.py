"""Resource limits of decoding, checked between expansions: a problem's time and the process's memory.

They are also checked within an expansion, while its successors are built and between chunks of its new
states (`Expander.expand`): one node can have hundreds of thousands of successors. There a problem out of
time ends before its expansion is complete, and over the memory limit the one with the most successors in
the expansion under way ends.

`decode.time_limit` (seconds per problem, from its start, goal-agenda stages together) ends a problem
with outcome `timeout`. `decode.memory_limit_mb` bounds the decoding process's resident memory: over
it, the live problem that has expanded the most nodes ends with outcome `memory`, one problem per
check, instead of the operating system killing the whole batch. Freed memory is not always given
back to the operating system, so the bound is exact for one problem per process (as a competition
harness runs them) and conservative for a batch. Memory is read (psutil, microseconds) at most every
`MEMORY_CHECK_SECONDS`, whatever the number of expansions in between: a search that generates
hundreds of children per expansion grows by gigabytes within a few hundred expansions. Both limits
are off by default, and then nothing is read.
"""

from __future__ import annotations

import time

import psutil

from statecentric_jax.search.base import DecodeConfig

MEMORY_CHECK_SECONDS = 0.05  # a read costs microseconds


class Limits:
    def __init__(self, config: DecodeConfig):
        self.seconds = config.time_limit
        self.bytes = config.memory_limit_mb * 2**20
        self.process = psutil.Process() if self.bytes else None
        self.last_read = -float("inf")  # time.perf_counter() of the last read

    def timed_out(self, started: float) -> bool:
        """Whether a problem started at `started` (time.perf_counter) has used up its time."""
        return self.seconds > 0 and time.perf_counter() - started > self.seconds

    def memory_exceeded(self) -> bool:
        """Whether the process is over its memory limit; read once `MEMORY_CHECK_SECONDS` have passed."""
        if self.process is None or time.perf_counter() - self.last_read < MEMORY_CHECK_SECONDS:
            return False
        self.last_read = time.perf_counter()
        return self.process.memory_info().rss > self.bytes
