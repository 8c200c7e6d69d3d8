"""Solve the PDDL problems of some splits with Fast Downward and store plans and trajectories.

  python launch/generate_plans.py --pddl_root=data --workdir=runs/plans

A rerun skips the problems already finished (also after a killed run).
"""

import os

from absl import flags

from statecentric_jax.cli import run_main
from statecentric_jax.problems.fast_downward import FALLBACKS
from statecentric_jax.problems.plan_generation import generate_plans

_PDDL_ROOT = flags.DEFINE_string(
    "pddl_root", "data", "data/ or a tree like the paper's splits: <domain>/domain.pddl, <domain>/<split>/*.pddl."
)
_WORKDIR = flags.DEFINE_string("workdir", "runs/plans", "Where plans, manifests and trajectories go.")
_DOMAINS = flags.DEFINE_list("domains", None, "Domains to solve (default: all under --pddl_root).")
_SPLITS = flags.DEFINE_list("splits", ["train", "validation"], "Splits to solve.")
_JOBS = flags.DEFINE_integer("jobs", os.cpu_count(), "Problems solved in parallel (0 = one per core).", lower_bound=0)
_ASTAR_TIME_LIMIT = flags.DEFINE_float("astar_time_limit", 60, "Seconds for A* with LM-cut.")
_GBFS_TIME_LIMIT = flags.DEFINE_float("gbfs_time_limit", 300, "Seconds for the fallback after A*.")
_FALLBACK = flags.DEFINE_enum(
    "fallback",
    "gbfs_ff",
    list(FALLBACKS),
    "After A*: GBFS with FF (the paper's), or LAMA's first iteration.",
)
_MEMORY_LIMIT_MB = flags.DEFINE_integer("memory_limit_mb", 4096, "Memory limit per planner run, in MiB.")
_STRICT = flags.DEFINE_bool("strict", False, "Exit non-zero if any problem or split failed.")


def main(argv):
    del argv
    summary = generate_plans(
        _PDDL_ROOT.value,
        _WORKDIR.value,
        domains=_DOMAINS.value,
        splits=_SPLITS.value,
        jobs=_JOBS.value,
        astar_time_limit=_ASTAR_TIME_LIMIT.value,
        gbfs_time_limit=_GBFS_TIME_LIMIT.value,
        memory_limit_mb=_MEMORY_LIMIT_MB.value,
        strict=_STRICT.value,
        fallback=_FALLBACK.value,
    )
    return summary.exit_code


if __name__ == "__main__":
    run_main(main)
