"""Table 1: Logistics, WL embedding, LSTM, state mode."""

from statecentric_jax import config


def get_config():
    return config.table1("logistics", "wl", "lstm", "state")
