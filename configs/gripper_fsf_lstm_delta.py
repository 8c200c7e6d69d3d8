"""Table 1: Gripper, FSF embedding, LSTM, delta mode."""

from statecentric_jax import config


def get_config():
    return config.table1("gripper", "fsf", "lstm", "delta")
