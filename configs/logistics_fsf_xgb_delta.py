"""Table 1: Logistics, FSF embedding, XGBoost, delta mode."""

from statecentric_jax import config


def get_config():
    return config.table1("logistics", "fsf", "xgb", "delta")
