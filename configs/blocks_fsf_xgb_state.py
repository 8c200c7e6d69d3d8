"""Table 1: Blocksworld, FSF embedding, XGBoost, state mode."""

from statecentric_jax import config


def get_config():
    return config.table1("blocks", "fsf", "xgb", "state")
