"""Table 1: Gripper, FSF embedding, XGBoost, state mode."""

from statecentric_jax import config


def get_config():
    return config.table1("gripper", "fsf", "xgb", "state")
