"""Table 1: VisitAll, WL embedding, LSTM, state mode."""

from statecentric_jax import config


def get_config():
    return config.table1("visitall", "wl", "lstm", "state")
