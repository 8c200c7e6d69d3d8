"""Table 1: Logistics, FSF embedding, LSTM, delta mode."""

from statecentric_jax import config


def get_config():
    return config.table1("logistics", "fsf", "lstm", "delta")
