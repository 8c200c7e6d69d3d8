"""blocks_wl_xgb_state with 10 XGBoost rounds: a small but real sweep job for benchmarks.scaleout."""

from statecentric_jax import config as config_lib


def get_config():
    config = config_lib.table1("blocks", "wl", "xgb", "state")
    config.xgb.rounds = 10
    return config
