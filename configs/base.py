"""Defaults shared by every configuration (the paper's hyperparameters).

The values are defined in `statecentric_jax/config.py`; override any of them on
the command line, e.g. `--config=configs/base.py --config.data.domain=gripper`.
"""

from statecentric_jax import config


def get_config():
    return config.base()
