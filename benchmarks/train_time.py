"""Training time, selected validation loss and model size per Table 1 configuration.

    python benchmarks/train_time.py --pddl_root=<paper splits> \
        --configs=blocks_wl_lstm_state,blocks_wl_xgb_delta

Each configuration is trained once with its config file's settings (plus the
overrides below) into --workdir/<name>; XGBoost configurations are trained once
per multi-output strategy in --strategies. Plans and embeddings are prepared
first (cached) and not timed; the wall time is model fitting only. Rows are
printed as they finish.
"""

import itertools
import pathlib

import jax
from absl import flags

from benchmarks.common import load_line, print_header
from statecentric_jax import config as config_lib
from statecentric_jax.cli import run_main
from statecentric_jax.embedding.config import ENCODINGS
from statecentric_jax.learning.config import MODEL_KINDS, MULTI_STRATEGIES
from statecentric_jax.learning.train import train_model
from statecentric_jax.learning.transitions import MODES
from statecentric_jax.method.pipeline import prepare_data
from statecentric_jax.problems import layout

ALL = ["_".join(c) for c in itertools.product(layout.DOMAINS, ENCODINGS, MODEL_KINDS, MODES)]

_PDDL_ROOT = flags.DEFINE_string("pddl_root", "data", "PDDL root (data/ or a paper-splits-like tree).")
_CONFIGS = flags.DEFINE_list("configs", ALL, "Configurations <domain>_<encoding>_<model>_<mode> (default: all 32).")
_STRATEGIES = flags.DEFINE_list("strategies", list(MULTI_STRATEGIES), "XGBoost multi-output strategies to compare.")
_WORKDIR = flags.DEFINE_string("workdir", "runs/bench/train_time", "Where the trained models go.")
_N_JOBS = flags.DEFINE_integer("n_jobs", 0, "XGBoost CPU threads (0: all cores).")
_EPOCHS = flags.DEFINE_integer("epochs", None, "Override the LSTM epochs (default: the config's 250).")
_ROUNDS = flags.DEFINE_integer("rounds", None, "Override the XGBoost maximum rounds (default: the config's 1000).")


def variants(name: str):
    """(row label, config) pairs for one configuration name."""
    config = config_lib.table1(*name.split("_"))
    config.data.pddl_root = _PDDL_ROOT.value
    config.xgb.n_jobs = _N_JOBS.value
    config.lstm.epochs = _EPOCHS.value or config.lstm.epochs
    config.xgb.rounds = _ROUNDS.value or config.xgb.rounds
    if config.model.kind == "lstm":
        return [("-", config)]
    out = []
    for strategy in _STRATEGIES.value:
        variant = config.copy_and_resolve_references()
        variant.xgb.multi_strategy = strategy
        out.append((strategy, variant))
    return out


def main(argv):
    del argv
    runs = [(name, label, config) for name in _CONFIGS.value for label, config in variants(name)]
    data = {name: prepare_data(config) for name, _, config in runs}  # cached; printed before the table
    print_header()
    print(f"JAX device: {jax.devices()[0]} | {load_line()}")
    print(
        "| config | xgb strategy | D | train transitions | fit wall s | epochs/rounds run (best)"
        " | best val loss | size |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for name, label, config in runs:
        splits, encoder = data[name]
        workdir = pathlib.Path(_WORKDIR.value) / (name if label == "-" else f"{name}-{label}")
        result = train_model(config, splits["train"], splits["validation"], encoder, workdir)
        size = result.model_size
        size_text = f"{size['parameters']:,} params" if "parameters" in size else f"{size['nodes']:,} nodes"
        transitions = sum(len(t) - 1 for t in splits["train"].trajectories)
        print(
            f"| {name} | {label} | {encoder.dim} | {transitions} | {result.seconds:.1f} | "
            f"{result.steps} ({result.best_step}) | {result.best_validation_loss:.4g} | {size_text} |",
            flush=True,
        )
    print(f"after: {load_line()}")


if __name__ == "__main__":
    run_main(main)
