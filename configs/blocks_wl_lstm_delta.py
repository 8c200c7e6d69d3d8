"""Table 1: Blocksworld, WL embedding, LSTM, delta mode."""

from statecentric_jax import config


def get_config():
    return config.table1("blocks", "wl", "lstm", "delta")
