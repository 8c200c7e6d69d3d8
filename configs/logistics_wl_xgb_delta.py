"""Table 1: Logistics, WL embedding, XGBoost, delta mode."""

from statecentric_jax import config


def get_config():
    return config.table1("logistics", "wl", "xgb", "delta")
