"""Which accelerator this machine offers, for libraries that must be told (XGBoost)."""

from __future__ import annotations

import glob

import jax


def gpu_available() -> bool:
    """True if JAX runs on a GPU or an NVIDIA device node exists (a CPU-only JAX on a GPU machine)."""
    return jax.default_backend() == "gpu" or bool(glob.glob("/dev/nvidia[0-9]*"))
