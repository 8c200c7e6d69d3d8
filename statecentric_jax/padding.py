"""Padded array sizes: powers of two, so jit-compiled functions see few distinct shapes."""

from __future__ import annotations


def next_power_of_two(n: int) -> int:
    """The smallest power of two >= n (1 for n <= 1)."""
    return 1 << max(n - 1, 0).bit_length()
