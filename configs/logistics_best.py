"""Beyond the paper, Logistics: WL-XGB delta + a ridge cost-to-go + best-first decoding (docs/method.md)."""

from statecentric_jax import config


def get_config():
    return config.best("logistics")
