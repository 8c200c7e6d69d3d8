"""Train and evaluate one configuration over several seeds, then print its success table.

  python launch/run_experiment.py --config=configs/blocks_wl_xgb_delta.py --workdir=runs/blocks_wl_xgb_delta

Each seed goes to <workdir>/seed<N>/; finished seeds and splits are skipped on rerun.
"""

from absl import flags
from ml_collections import config_flags

from statecentric_jax.atomic import check_writable
from statecentric_jax.cli import parse_ints, run_main
from statecentric_jax.method import pipeline

_CONFIG = config_flags.DEFINE_config_file("config", None, "A config file from configs/.", lock_config=True)
_WORKDIR = flags.DEFINE_string("workdir", None, "Run directory (one subfolder per seed).")
_SEEDS = flags.DEFINE_list("seeds", [str(s) for s in pipeline.SEEDS], "Seeds to train and evaluate.")
_SPLITS = flags.DEFINE_list("splits", list(pipeline.EVALUATION_SPLITS), "Splits to evaluate.")
flags.mark_flags_as_required(["config", "workdir"])


def main(argv):
    del argv
    seeds = parse_ints("seeds", _SEEDS.value)
    for folder in (_WORKDIR.value, _CONFIG.value.data.cache_dir):
        check_writable(folder)
    rates = pipeline.run_experiment(_CONFIG.value, _WORKDIR.value, seeds=seeds, splits=_SPLITS.value)
    print(pipeline.format_rates(rates))


if __name__ == "__main__":
    run_main(main)
