"""One configuration of a sweep, in its own process (started by `sweep.run_sweep`).

  python -m statecentric_jax.experiments.sweep_worker --config_json=<run>/sweep_config.json \
      --workdir=<run> --seeds=13,14

Runs `pipeline.run_experiment` on the resolved configuration the sweep wrote, so a sweep
needs no launch script on disk, only the installed package.
"""

from __future__ import annotations

from collections.abc import Sequence

from absl import flags

from statecentric_jax.cli import run_main
from statecentric_jax.experiments import sweep
from statecentric_jax.method import pipeline

_CONFIG_JSON = flags.DEFINE_string("config_json", "", "The configuration, as written by the sweep.")
_WORKDIR = flags.DEFINE_string("workdir", "", "Run directory (one subfolder per seed).")
_SEEDS = flags.DEFINE_list("seeds", [str(s) for s in pipeline.SEEDS], "Seeds to train and evaluate.")


def main(argv: Sequence[str]) -> None:
    del argv
    rates = sweep.run_config(_CONFIG_JSON.value, _WORKDIR.value, [int(s) for s in _SEEDS.value])
    print(pipeline.format_rates(rates))


if __name__ == "__main__":
    flags.mark_flags_as_required(["config_json", "workdir"])
    run_main(main)
