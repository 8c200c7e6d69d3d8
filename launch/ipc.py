"""Our planner beside Fast Downward's baselines on a benchmark in IPC layout, under per-problem limits.

  python launch/ipc.py --root=<IPC-layout folder> --problems=every=10 --time_limit=120 \
      --memory_limit_mb=8192 --planners=recommended,lama_first,gbfs_ff --workdir=runs/ipc

Trains our planner per domain from its training problems only, plans every selected test problem in a process of
its own, re-checks every plan, and writes results.csv, coverage.md, quality.md, cumulative.png and the plans into
--workdir (statecentric_jax/experiments/ipc.py). A rerun resumes: finished problems are not planned again.
"""

import json

from absl import flags

from statecentric_jax.cli import run_main
from statecentric_jax.experiments import ipc

_ROOT = flags.DEFINE_string("root", None, "Benchmark folder in IPC layout (<domain>/domain.pddl, training/, testing/).")
_DOMAINS = flags.DEFINE_list("domains", None, "Domains to run (default: every domain under --root).")
_LEVELS = flags.DEFINE_list("levels", list(ipc.DEFAULT_LEVELS), "Test levels: folders under <domain>/testing/.")
_PROBLEMS = flags.DEFINE_string("problems", "all", "all, every=K (p01, p(1+K), ...) or names such as p01,p02.")
_PLANNERS = flags.DEFINE_list(
    "planners",
    [ipc.RECOMMENDED, *ipc.FAST_DOWNWARD],
    "recommended (configs/recommended.py), lama_first, gbfs_ff (Fast Downward), or config file paths.",
)
_TIME_LIMIT = flags.DEFINE_float("time_limit", None, "Seconds of planning per problem, wall clock.")
_MEMORY_LIMIT_MB = flags.DEFINE_integer("memory_limit_mb", 8192, "Resident memory per planner process, MiB.")
_TRAINING_TIME_LIMIT = flags.DEFINE_float(
    "training_time_limit", ipc.TRAINING_LIMITS[0], "Seconds of training per domain and planner, wall clock."
)
_TRAINING_MEMORY_LIMIT_MB = flags.DEFINE_integer(
    "training_memory_limit_mb", ipc.TRAINING_LIMITS[1], "Resident memory of one training, MiB."
)
_JOBS = flags.DEFINE_integer("jobs", 1, "Problems planned at the same time.")
_WORKDIR = flags.DEFINE_string("workdir", None, "Where runs, plans, records and tables go.")
_BACKEND = flags.DEFINE_enum("backend", "local", ["local", "ray"], "Plan here, or as Ray tasks.")
_REPLAN = flags.DEFINE_list(
    "replan", [], "Planners to plan again where a record matches (after a change to their code, not their settings)."
)
flags.mark_flags_as_required(["root", "time_limit", "workdir"])


def main(argv):
    del argv
    coverage = ipc.run(
        _ROOT.value,
        _WORKDIR.value,
        domains=_DOMAINS.value,
        levels=_LEVELS.value,
        problems=_PROBLEMS.value,
        planners=_PLANNERS.value,
        time_limit=_TIME_LIMIT.value,
        memory_limit_mb=_MEMORY_LIMIT_MB.value,
        training_time_limit=_TRAINING_TIME_LIMIT.value,
        training_memory_limit_mb=_TRAINING_MEMORY_LIMIT_MB.value,
        jobs=_JOBS.value,
        backend=_BACKEND.value,
        replan=_REPLAN.value,
    )
    print(json.dumps(coverage, indent=1))


if __name__ == "__main__":
    run_main(main)
