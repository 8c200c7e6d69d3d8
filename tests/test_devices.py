"""JAX's default backend decides the device of every model, XGBoost's included."""

import glob

import jax
import pytest
import xgboost

from statecentric_jax import devices
from statecentric_jax.learning import xgb


@pytest.mark.parametrize(
    "backend, cuda_build, expected",
    [("cpu", False, "cpu"), ("cpu", True, "cpu"), ("gpu", True, "cuda"), ("gpu", False, "cpu")],
)
def test_xgboost_follows_jax(monkeypatch, backend, cuda_build, expected):
    monkeypatch.setattr(jax, "default_backend", lambda: backend)
    monkeypatch.setattr(xgboost, "build_info", lambda: {"USE_CUDA": cuda_build})
    assert devices.on_gpu() == (backend == "gpu")
    assert xgb.device() == expected


def test_a_gpu_device_node_beside_a_cpu_jax_is_not_a_gpu(monkeypatch):
    monkeypatch.setattr(jax, "default_backend", lambda: "cpu")
    monkeypatch.setattr(glob, "glob", lambda pattern, **kwargs: ["/dev/nvidia0"])
    monkeypatch.setattr(xgboost, "build_info", lambda: {"USE_CUDA": True})
    assert not devices.on_gpu() and xgb.device() == "cpu"


def test_this_machine_answers_consistently():
    assert devices.on_gpu() == (jax.devices()[0].platform == "gpu")
