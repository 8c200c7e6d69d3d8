"""Which accelerator runs the models. One question decides for every library: the backend JAX runs on.

JAX picks its backend itself (a CUDA build of jaxlib on a machine with a GPU runs there); XGBoost must be
told, and is told the same (`learning/xgb.py`), so the transition model, the LSTM and the trees never run on
different devices. A CPU-only JAX on a machine with a GPU runs both on the CPU.
"""

from __future__ import annotations

import jax


def on_gpu() -> bool:
    """Whether JAX's default backend is a GPU."""
    return jax.default_backend() == "gpu"
