"""Train one configuration of the paper's Table 1 into a workdir.

  python launch/train.py --config=configs/blocks_wl_xgb_delta.py --workdir=runs/blocks_wl_xgb_delta \
      --config.data.pddl_root=<paper splits> --config.seed=14

The recommended configuration first selects its settings on the domain's training problems
(statecentric_jax/method/selection.py) and trains the chosen run into <workdir>/run:

  python launch/train.py --config=configs/recommended.py --config.data.domain=miconic \
      --config.data.pddl_root=<IPC-layout folder> --workdir=runs/recommended/miconic

Plans and embedded datasets are generated first (and cached in
`config.data.cache_dir`). The workdir receives config.json, checkpoint/,
encoder.json, metrics.jsonl and model_size.json (with `config.ensemble.members`, also
members/<kind>_<mode>/ and ensemble.json); `statecentric_jax.learning.ensemble.load_run` reads it back.
"""

from absl import flags
from ml_collections import config_flags

from statecentric_jax.atomic import check_writable
from statecentric_jax.cli import run_main
from statecentric_jax.method.selection import train_configured

_CONFIG = config_flags.DEFINE_config_file("config", None, "A config file from configs/.", lock_config=True)
_WORKDIR = flags.DEFINE_string("workdir", None, "Where the trained model and its metrics go.")
flags.mark_flags_as_required(["config", "workdir"])


def main(argv):
    del argv
    for folder in (_WORKDIR.value, _CONFIG.value.data.cache_dir):  # before training, not after it
        check_writable(folder)
    train_configured(_CONFIG.value, _WORKDIR.value)


if __name__ == "__main__":
    run_main(main)
