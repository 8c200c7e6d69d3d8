"""Seeds of one LSTM config trained one after another versus together (one vmapped program).

    python -m benchmarks.seeds --config_name=blocks_wl_lstm_state --epochs=20

Prints the machine, the JAX device and the load average, the wall time of each
way (data preparation cached and not timed; compiles are timed: one per seed one
after another, as `lstm.fit` per seed does, one in all together), and last
`seeds-together speed-up: X.Xx`.
"""

import time

import jax
from absl import flags

from benchmarks.common import load_line, print_header
from statecentric_jax import config as config_lib
from statecentric_jax.cli import run_main
from statecentric_jax.learning import lstm
from statecentric_jax.method.pipeline import prepare_data

_CONFIG = flags.DEFINE_string(
    "config_name", "blocks_wl_lstm_state", "An LSTM configuration <domain>_<encoding>_lstm_<mode>."
)
_PDDL_ROOT = flags.DEFINE_string("pddl_root", "data", "PDDL root (data/ or a paper-splits-like tree).")
_EPOCHS = flags.DEFINE_integer("epochs", None, "Override the LSTM epochs (default: the config's).")
_SEEDS = flags.DEFINE_list("seeds", ["13", "14", "15"], "Seeds to train.")


def main(argv):
    del argv
    config = config_lib.table1(*_CONFIG.value.split("_"))
    config.data.pddl_root = _PDDL_ROOT.value
    config.lstm.epochs = _EPOCHS.value or config.lstm.epochs
    splits, _ = prepare_data(config)
    seeds = [int(s) for s in _SEEDS.value]
    print_header()
    print(f"device: {jax.devices()[0]} | {load_line()}")
    args = (splits["train"], splits["validation"], config.model.mode, config.lstm)
    start = time.perf_counter()
    for seed in seeds:
        lstm.fit(*args, seed)
    one_by_one = time.perf_counter() - start
    start = time.perf_counter()
    lstm.fit_seeds(*args, seeds)
    together = time.perf_counter() - start
    print(
        f"{len(seeds)} seeds, {config.lstm.epochs} epochs: "
        f"one after another {one_by_one:.1f} s, together {together:.1f} s"
    )
    print(f"after: {load_line()}")
    print(f"seeds-together speed-up: {one_by_one / together:.1f}x")


if __name__ == "__main__":
    run_main(main)
