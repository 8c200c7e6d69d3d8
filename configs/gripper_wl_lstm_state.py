"""Table 1: Gripper, WL embedding, LSTM, state mode."""

from statecentric_jax import config


def get_config():
    return config.table1("gripper", "wl", "lstm", "state")
