"""The recommended configuration for any domain: name it and its problems on the command line,

    python launch/train.py --config=configs/recommended.py --config.data.domain=<name> \
        --config.data.pddl_root=<root> --workdir=<dir>

and the settings beyond the transition model are chosen per domain on its training problems
(statecentric_jax/method/selection.py)."""

from statecentric_jax import config


def get_config():
    return config.recommended()
