"""Table 1: VisitAll, FSF embedding, XGBoost, delta mode."""

from statecentric_jax import config


def get_config():
    return config.table1("visitall", "fsf", "xgb", "delta")
