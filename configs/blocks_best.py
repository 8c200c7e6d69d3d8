"""Beyond the paper, Blocksworld: WL-XGB delta + a ridge cost-to-go on a WL φ of its own, fitted on the expert
plans and labelled random-walk states + best-first decoding (docs/method.md)."""

from statecentric_jax import config


def get_config():
    return config.best("blocks")
