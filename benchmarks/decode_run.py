"""Decoding time of one trained run on one split: the paper's beam, then the run with other decoding settings.

    python -m benchmarks.decode_run \
        --run=runs/generalization/logistics/model-state-alpha10-aggregation4-calls200-value \
        --pddl_root=runs/generalization/large-problems --domain=logistics --split=held-out \
        --strategy=best_first --budget=40000 --path_weight=0.2 --goal_agenda=1

`benchmarks.generalization` trains and aggregates the models it decodes with, so two commits may
not decode with the same model; this one only loads `--run`, so it times two commits (one of them a
worktree on PYTHONPATH) on the very same model. Each row: problems solved, decoding seconds, the
ratio to the paper's beam, the CPU seconds of this process (a loaded machine changes them less),
nodes expanded, the mean plan length of the solved problems, where the time went (`DecodeStats`;
the model in a thread of its own), and the sha256 of the plans (the same plans, the same digest).
It never decodes a test split.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Sequence

from absl import flags

from benchmarks.common import decode_split, load_line, plans_digest, print_header, refuse_test_splits
from statecentric_jax.cli import run_main
from statecentric_jax.learning.ensemble import load_run
from statecentric_jax.method.evaluation import cost_to_go_for
from statecentric_jax.search.base import EXPLORATIONS, STRATEGIES, decode_config
from statecentric_jax.search.expander import DecodeStats

# the paper's beam takes none of the settings that only best-first search takes
BEST_FIRST_ONLY_OFF = {"prune_dead_ends": False, "estimate_helpful_only": False, "exploration": "none"}

_RUN = flags.DEFINE_string("run", None, "A trained run (launch/train.py --workdir).", required=True)
_PDDL_ROOT = flags.DEFINE_string("pddl_root", "data", "PDDL root: <root>/<domain>/{domain.pddl,<split>/}.")
_DOMAIN = flags.DEFINE_string("domain", None, "Domain (default: the run's).")
_SPLIT = flags.DEFINE_string("split", "validation", "Split of --pddl_root (never a test split).")
_STRATEGY = flags.DEFINE_enum("strategy", None, list(STRATEGIES), "decode.strategy (default: the run's).")
_BUDGET = flags.DEFINE_integer("budget", None, "decode.budget (default: the run's).")
_PATH_WEIGHT = flags.DEFINE_float("path_weight", None, "decode.path_weight (default: the run's).")
_VALUE_WEIGHT = flags.DEFINE_float("value_weight", None, "decode.value_weight (default: the run's).")
_GOAL_AGENDA = flags.DEFINE_integer("goal_agenda", None, "decode.goal_agenda (default: the run's).")
_EXPLORATION = flags.DEFINE_enum("exploration", None, list(EXPLORATIONS), "decode.exploration (default: the run's).")
_CLIP = flags.DEFINE_bool("clip_cost_to_go", None, "decode.clip_cost_to_go (default: the run's).")


def main(argv: Sequence[str]) -> None:
    del argv
    refuse_test_splits("--split", [_SPLIT.value])
    run = load_run(_RUN.value)
    domain = _DOMAIN.value or run.config.data.domain
    overrides = {
        "strategy": _STRATEGY.value,
        "budget": _BUDGET.value,
        "path_weight": _PATH_WEIGHT.value,
        "value_weight": _VALUE_WEIGHT.value,
        "goal_agenda": _GOAL_AGENDA.value,
        "exploration": _EXPLORATION.value,
        "clip_cost_to_go": _CLIP.value,
    }
    columns = ["setting", "solved", "decode s", "vs beam", "CPU s", "expanded", "mean plan length (solved)"]
    print_header([*columns, "model, successors, embedding, distances s", "plans"])
    beam_seconds = None
    for name, settings in (
        ("beam (paper)", decode_config(run.config, strategy="beam", **BEST_FIRST_ONLY_OFF)),
        ("the run with the flags", decode_config(run.config, **overrides)),
    ):
        stats = DecodeStats()
        cpu_start = time.process_time()
        results, seconds = decode_split(
            run, _PDDL_ROOT.value, domain, _SPLIT.value, settings, cost_to_go_for(run, settings), stats
        )
        cpu_seconds = time.process_time() - cpu_start
        beam_seconds = beam_seconds or seconds
        where = f"{stats.model:.1f}, {stats.successors:.1f}, {stats.embedding:.1f}, {stats.distances:.1f}"
        solved = [len(r.plan) for r in results if r.solved]
        length = f"{statistics.mean(solved):.1f}" if solved else "-"
        cells = [
            name,
            f"{len(solved)}/{len(results)}",
            f"{seconds:.1f}",
            f"{seconds / beam_seconds:.1f}x",
            f"{cpu_seconds:.1f}",
            f"{sum(r.expanded for r in results):,}",
            length,
            where,
            plans_digest(results),
        ]
        print(f"| {' | '.join(cells)} |")
    print(load_line())


if __name__ == "__main__":
    run_main(main)
